import { z } from 'zod';

const rate = z.number().min(0).max(1).default(0);

/** Faults the sandbox injects on the spec's endpoints and webhooks. All off by default. */
export const FaultConfig = z.object({
  /** Fraction of API requests answered with 500/502/503. */
  error5xxRate: rate,
  /** Fraction of API requests whose connection is reset without a response. */
  resetRate: rate,
  /** Fraction of API requests answered 429 with Retry-After. */
  rateLimitRate: rate,
  retryAfterSeconds: z.number().int().min(0).max(3600).default(1),
  /** Latency added to every API request, in ms. */
  latencyMs: z.number().int().min(0).max(60_000).default(0),
  /** Fraction of ZIP downloads cut off halfway (the declared Content-Length is not met). */
  truncateZipRate: rate,
  /** Fraction of webhook deliveries sent twice. */
  duplicateWebhookRate: rate,
  /** Fraction of webhooks never sent (recorded as dropped). */
  dropWebhookRate: rate,
  /** Seed for the fault decisions, so a run can be reproduced. */
  seed: z.number().int().default(1),
});
export type FaultConfig = z.infer<typeof FaultConfig>;
export type FaultConfigInput = z.input<typeof FaultConfig>;

/** A seeded PRNG (mulberry32): the same seed gives the same sequence of fault decisions. */
export class FaultInjector {
  #config: FaultConfig;
  #state: number;

  constructor(config: FaultConfigInput = {}) {
    this.#config = FaultConfig.parse(config);
    this.#state = this.#config.seed >>> 0;
  }

  get config(): FaultConfig {
    return this.#config;
  }

  configure(config: FaultConfigInput): void {
    this.#config = FaultConfig.parse(config);
    this.#state = this.#config.seed >>> 0;
  }


  /** Decides the fault, if any, for one API request. */
  forRequest(): 'reset' | '429' | '5xx' | undefined {
    const c = this.#config;
    if (this.#hit(c.resetRate)) return 'reset';
    if (this.#hit(c.rateLimitRate)) return '429';
    if (this.#hit(c.error5xxRate)) return '5xx';
    return undefined;
  }

  truncateZip(): boolean {
    return this.#hit(this.#config.truncateZipRate);
  }

  forWebhook(): 'drop' | 'duplicate' | undefined {
    if (this.#hit(this.#config.dropWebhookRate)) return 'drop';
    if (this.#hit(this.#config.duplicateWebhookRate)) return 'duplicate';
    return undefined;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#next() * items.length)] as T;
  }

  #hit(probability: number): boolean {
    return probability > 0 && this.#next() < probability;
  }

  #next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}
