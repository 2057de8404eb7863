import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** An integrator's backend under chaos: verifies every event, records each `webhook-id` once, counts what fails to verify. */
export class ChaosReceiver {
  readonly events = new Map<string, { type: string; data: { referenceId?: string; participant?: { id: string } } }>();
  attempts = 0;
  unverified = 0;
  readonly #server: Server;
  url = '';

  constructor(secret: string) {
    const verifier = new Webhook(secret);
    this.#server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.attempts++;
        try {
          const event = verifier.verify(body, req.headers as Record<string, string>) as { type: string; data: never };
          const id = String(req.headers['webhook-id']);
          if (!this.events.has(id)) this.events.set(id, event);
          res.writeHead(204).end();
        } catch {
          this.unverified++;
          res.writeHead(401).end();
        }
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Events of one transaction, each once. */
  of(referenceId: string): { type: string; participantId?: string }[] {
    return [...this.events.values()]
      .filter((e) => e.data.referenceId === referenceId)
      .map((e) => ({ type: e.type, ...(e.data.participant ? { participantId: e.data.participant.id } : {}) }));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
