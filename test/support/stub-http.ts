import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

export type StubHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/**
 * A real HTTP server on loopback whose answer each test scripts: used where a
 * test needs the provider to misbehave in one exact way (a reset, a stall, a
 * response outside the contract).
 */
export class StubHttpServer {
  readonly requests: RecordedRequest[] = [];
  handler: StubHandler = (_req, res) => {
    res.statusCode = 500;
    res.end('no handler');
  };
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<StubHttpServer> {
    const server = createServer();
    const stub = new StubHttpServer(server);
    server.on('request', (req, res) => {
      stub.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      Promise.resolve(stub.handler(req, res)).catch((err: unknown) => {
        res.statusCode = 599;
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return stub;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Parses a multipart request with the platform's own Fetch implementation. */
export async function readForm(req: IncomingMessage): Promise<FormData> {
  const body = await readBody(req);
  const request = new Request('http://stub.local/', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type'] ?? '' },
    body,
  });
  return request.formData();
}
