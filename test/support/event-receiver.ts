import type { IncomingMessage } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { StubHttpServer } from './stub-http.js';

export interface ReceivedEvent {
  id: string;
  type: string;
  /** The event's number in its transaction's log. */
  sequence?: number;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * An integrator's backend as the docs tell it to be written: it verifies each
 * request with the `standardwebhooks` library and its own secret, refuses
 * what does not verify, and deduplicates by `webhook-id`. It can fail the
 * first attempt of every event, so the sender's retries are exercised.
 */
export class EventReceiver {
  /** Each event once, in the order first accepted. */
  readonly events: ReceivedEvent[] = [];
  /** Every attempt, verified or not. */
  attempts = 0;
  rejected = 0;
  failFirstAttempt = false;
  /** While set, every attempt is answered 503 (an endpoint that is down). */
  down = false;
  readonly #seen = new Set<string>();
  readonly #failed = new Set<string>();

  private constructor(
    readonly server: StubHttpServer,
    secret: string,
  ) {
    const verifier = new Webhook(secret);
    server.handler = async (req, res) => {
      this.attempts++;
      const body = await readBody(req);
      let payload: { type: string; sequence?: number; timestamp: string; data: Record<string, unknown> };
      try {
        payload = verifier.verify(body, req.headers as Record<string, string>) as typeof payload;
      } catch {
        this.rejected++;
        res.statusCode = 401;
        return void res.end('signature does not verify');
      }
      const id = String(req.headers['webhook-id']);
      if (this.down) {
        res.statusCode = 503;
        return void res.end('down');
      }
      if (this.failFirstAttempt && !this.#failed.has(id)) {
        this.#failed.add(id);
        res.statusCode = 503;
        return void res.end('try again');
      }
      if (!this.#seen.has(id)) {
        this.#seen.add(id);
        this.events.push({ id, ...payload });
      }
      res.statusCode = 204;
      res.end();
    };
  }

  static async start(secret: string): Promise<EventReceiver> {
    return new EventReceiver(await StubHttpServer.start(), secret);
  }

  get url(): string {
    return `${this.server.url}/esign-events`;
  }

  of(type: string): ReceivedEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
