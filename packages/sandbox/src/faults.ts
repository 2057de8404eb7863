import { FaultConfig, type FaultConfigInput } from '../../../src/client/sandbox-control.js';
import { seededRandom } from '../../../src/util/seeded-random.js';

/** Counts of the faults injected, by kind. */
export interface InjectedFaults {
  '5xx': number;
  reset: number;
  lostResponse: number;
  '429': number;
  truncatedZip: number;
  droppedWebhook: number;
  duplicatedWebhook: number;
}

/** Fault decisions from a seeded PRNG: the same seed gives the same sequence of faults. */
export class FaultInjector {
  #config: FaultConfig;
  #next: () => number;
  #injected: InjectedFaults = { '5xx': 0, reset: 0, lostResponse: 0, '429': 0, truncatedZip: 0, droppedWebhook: 0, duplicatedWebhook: 0 };

  constructor(config: FaultConfigInput = {}) {
    this.#config = FaultConfig.parse(config);
    this.#next = seededRandom(this.#config.seed);
  }

  get config(): FaultConfig {
    return this.#config;
  }

  configure(config: FaultConfigInput): void {
    this.#config = FaultConfig.parse(config);
    this.#next = seededRandom(this.#config.seed);
  }

  /** How many faults of each kind were injected since start (a chaos report shows them). */
  get injected(): InjectedFaults {
    return { ...this.#injected };
  }

  /** Decides the fault, if any, for one API request. */
  forRequest(): 'reset' | 'lose-response' | '429' | '5xx' | undefined {
    const c = this.#config;
    if (this.#hit(c.resetRate)) return this.#count('reset');
    if (this.#hit(c.lostResponseRate)) {
      this.#injected.lostResponse++;
      return 'lose-response';
    }
    if (this.#hit(c.rateLimitRate)) return this.#count('429');
    if (this.#hit(c.error5xxRate)) return this.#count('5xx');
    return undefined;
  }

  truncateZip(): boolean {
    if (!this.#hit(this.#config.truncateZipRate)) return false;
    this.#injected.truncatedZip++;
    return true;
  }

  forWebhook(): 'drop' | 'duplicate' | undefined {
    if (this.#hit(this.#config.dropWebhookRate)) {
      this.#injected.droppedWebhook++;
      return 'drop';
    }
    if (this.#hit(this.#config.duplicateWebhookRate)) {
      this.#injected.duplicatedWebhook++;
      return 'duplicate';
    }
    return undefined;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#next() * items.length)] as T;
  }

  #count<K extends 'reset' | '429' | '5xx'>(kind: K): K {
    this.#injected[kind]++;
    return kind;
  }

  #hit(probability: number): boolean {
    return probability > 0 && this.#next() < probability;
  }
}
