import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A round-robin HTTP load balancer in front of the bridges, as a Kubernetes
 * Service or a cloud load balancer would be: a request goes to the next
 * bridge, or to another when that one refuses the connection (a killed
 * bridge). Answers 502 when none is reachable, so the provider retries.
 */
export class RoundRobinBalancer {
  readonly #targets: string[];
  #next = 0;
  #server: Server | undefined;
  url = '';

  constructor(targets: readonly string[]) {
    this.#targets = [...targets];
  }

  async listen(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#forward(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this.url;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    for (let tried = 0; tried < this.#targets.length; tried++) {
      const target = new URL(req.url ?? '/', this.#targets[this.#next++ % this.#targets.length]);
      const answered = await new Promise<boolean>((resolve) => {
        const out = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (upstream) => {
          res.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(res);
          upstream.on('end', () => resolve(true));
        });
        // Only a refused or reset connection moves on to the next bridge; the request may not have reached it.
        out.on('error', () => resolve(res.headersSent));
        out.end(body);
      });
      if (answered) return;
    }
    res.writeHead(502, { 'content-type': 'text/plain' }).end('no bridge reachable');
  }
}
