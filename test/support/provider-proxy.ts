import { EsignClient } from '../../src/esign/client.js';
import { StubHttpServer } from './stub-http.js';

/** What the proxy answers instead of the provider: a status and a problem+json detail. */
export interface ProxyAnswer {
  status: number;
  detail?: string;
}

/**
 * A real HTTP proxy in front of the sandbox: every request goes through to it unless `answer` says otherwise for
 * that method and path, so a test makes the provider refuse or fail one endpoint (its signing URLs, one
 * transaction's record) while the rest of the API works, and the worker's own client and error mapping run.
 */
export class ProviderProxy {
  /** Requests answered by the proxy itself, as `METHOD path`. */
  readonly answered: string[] = [];
  answer: (method: string, path: string) => ProxyAnswer | undefined = () => undefined;
  /**
   * A request to hold: it is sent on to the provider only when the promise settles, whether or not its client is
   * still waiting (a request that lands late, after its client gave up on it).
   */
  hold: (method: string, path: string) => Promise<void> | undefined = () => undefined;
  /** Held requests the provider has answered since, as `METHOD path status`. */
  readonly landed: string[] = [];

  private constructor(
    readonly server: StubHttpServer,
    readonly client: EsignClient,
  ) {}

  static async start(target: string, token: string): Promise<ProviderProxy> {
    const server = await StubHttpServer.start();
    const targetUrl = new URL(target);
    const proxy = new ProviderProxy(server, new EsignClient({ baseUrl: `${server.url}${targetUrl.pathname.replace(/\/$/, '')}`, token }));
    server.handler = async (req, res) => {
      const path = req.url ?? '/';
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const own = proxy.answer(req.method ?? 'GET', path);
      if (own) {
        proxy.answered.push(`${req.method} ${path}`);
        res.writeHead(own.status, { 'content-type': 'application/problem+json' });
        return void res.end(JSON.stringify({ title: 'Refused by the test', status: own.status, detail: own.detail ?? 'refused' }));
      }
      const holding = proxy.hold(req.method ?? 'GET', path);
      if (holding) await holding;
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const upstream = await fetch(new URL(path, targetUrl.origin), { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) });
      const bytes = Buffer.from(await upstream.arrayBuffer());
      if (holding) proxy.landed.push(`${req.method} ${path} ${upstream.status}`);
      if (res.destroyed) return;
      const kept = [...upstream.headers].filter(
        ([k]) => !['content-encoding', 'transfer-encoding', 'connection', 'content-length'].includes(k),
      );
      res.writeHead(upstream.status, Object.fromEntries(kept));
      res.end(bytes);
    };
    return proxy;
  }

  async close(): Promise<void> {
    await this.client.close();
    await this.server.close();
  }
}
