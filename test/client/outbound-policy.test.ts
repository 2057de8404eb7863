// Issue 38, item 1: no request leaves the worker or the sandbox for a URL a caller, or a caller's certificate, names
// unless the policy allows it (src/http/outbound.ts): the allow-list, the addresses a name resolves to (checked in
// the connection's own lookup), no redirects, answers bounded while they stream, a total deadline. Then the places
// that used to fetch what a certificate names: the worker's revocation client, the evidence renewal, the sandbox's
// seal, and what @libpdf/core fetches on its own once the guard is the process's dispatcher.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpTimestampAuthority, PDF } from '@libpdf/core';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import {
  boundedFetch,
  fetchBounded,
  installOutboundGuard,
  internalAddressKind,
  OutboundError,
  outboundDispatcher,
  OutboundPolicy,
  permitOutbound,
  policyRefusal,
  uninstallOutboundGuard,
  withGlobalFetchRefused,
  type Resolver,
} from '../../src/http/outbound.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { listener, plantedPdf, plantedPki, type Listener } from '../support/planted-signature.js';
import { timestampingCa } from '../support/renewal.js';

const MiB = 1024 * 1024;

let open: Listener[] = [];
async function listen(): Promise<Listener> {
  const l = await listener();
  open.push(l);
  return l;
}
let withdrawals: (() => void)[] = [];
function permit(rules: Parameters<typeof permitOutbound>[0]): () => void {
  const withdraw = permitOutbound(rules);
  withdrawals.push(withdraw);
  return withdraw;
}
afterEach(async () => {
  for (const w of withdrawals) w();
  withdrawals = [];
  await uninstallOutboundGuard();
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

/** What `promise` rejects with, as an OutboundError (or the cause fetch wraps one in). */
async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  const found = err instanceof OutboundError ? err : (err as { cause?: unknown }).cause;
  if (!(found instanceof OutboundError)) throw new Error(`not an OutboundError: ${String(err)}`, { cause: err });
  return found;
}

/** A server that streams `total` bytes (no Content-Length) as fast as the reader takes them; counts what it wrote. */
function streaming(l: Listener, total: number): { written: () => number } {
  let written = 0;
  l.answer = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pkix-crl' });
    const chunk = Buffer.alloc(64 * 1024, 0x30);
    const more = () => {
      while (written < total) {
        written += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    more();
  };
  return { written: () => written };
}

/** A server that sends its headers, then one byte every 100 ms, for ever. */
function trickling(l: Listener): void {
  l.answer = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pkix-crl' });
    const timer = setInterval(() => res.write('0'), 100);
    res.on('close', () => clearInterval(timer));
  };
}

describe('addresses', () => {
  it('names every internal address class, in every form, and lets public ones through', () => {
    const internal = [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      '[::1]',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::ffff:10.1.2.3',
      '64:ff9b::a9fe:a9fe',
      '2002:7f00:1::1',
      '::127.0.0.1',
    ];
    for (const address of internal) expect(internalAddressKind(address), address).toBeDefined();
    expect(internalAddressKind('169.254.169.254')).toBe('link-local');
    expect(internalAddressKind('::ffff:169.254.169.254')).toMatch(/^link-local \(IPv4-mapped 169\.254\.169\.254\)/);
    for (const address of [
      '8.8.8.8',
      '93.184.216.34',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      'docs.example.com',
    ]) {
      expect(internalAddressKind(address), address).toBeUndefined();
    }
  });
});

describe('the policy', () => {
  it('allows http(s) origins and hosts on the list only, without userinfo, and names the host but never the query', () => {
    const policy = new OutboundPolicy({ allow: ['https://docs.example.com', 'files.example.com'] });
    expect(policy.check('https://docs.example.com/a.pdf').host).toBe('docs.example.com');
    expect(policy.check('http://files.example.com:8080/a.pdf').host).toBe('files.example.com:8080');
    const reason = (url: string) => {
      try {
        policy.check(url);
        return 'allowed';
      } catch (err) {
        expect((err as Error).message).not.toMatch(/secret/);
        return (err as OutboundError).reason;
      }
    };
    expect(reason('https://docs.example.com:8443/a.pdf?token=secret')).toBe('not-allowed');
    expect(reason('http://docs.example.com/a.pdf?token=secret')).toBe('not-allowed');
    expect(reason('ftp://files.example.com/a.pdf?token=secret')).toBe('scheme');
    expect(reason('https://user:secret@docs.example.com/a.pdf')).toBe('userinfo');
    expect(reason('https://elsewhere.example.com/a.pdf?token=secret')).toBe('not-allowed');
    expect(reason('not a url')).toBe('invalid-url');
    // An internal literal on the list is explicit; a name is judged by what it resolves to.
    expect(new OutboundPolicy({ allow: ['http://127.0.0.1:4040'] }).check('http://127.0.0.1:4040/x').host).toBe('127.0.0.1:4040');
    expect(new OutboundPolicy({ allow: ['169.254.169.254'] }).permitsInternal('169.254.169.254')).toBe(true);
    expect(new OutboundPolicy({ allow: ['localhost'] }).permitsInternal('localhost')).toBe(true);
    expect(new OutboundPolicy({ allow: ['docs.example.com'] }).permitsInternal('docs.example.com')).toBe(false);
    expect(new OutboundPolicy({ allow: ['docs.example.com'], internal: ['docs.example.com'] }).permitsInternal('docs.example.com')).toBe(
      true,
    );
  });

  it('reaches an allow-listed loopback origin, and refuses one that is not listed without connecting', async () => {
    const allowed = await listen();
    const other = await listen();
    allowed.answer = (_req, res) => res.end('hello');
    const policy = new OutboundPolicy({ allow: [allowed.url] });
    const answer = await fetchBounded(`${allowed.url}/x`, { policy, maxBytes: 1024, timeoutMs: 5000 });
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe('hello');
    const refused = await refusal(fetchBounded(`${other.url}/x?token=secret`, { policy, maxBytes: 1024, timeoutMs: 5000 }));
    expect(refused.reason).toBe('not-allowed');
    expect(refused.message).toContain(new URL(other.url).host);
    expect(refused.message).not.toContain('secret');
    expect(other.connections).toBe(0);
  });

  it('refuses a name that resolves to an internal address unless that host is allowed to be internal; resolves once, in the connection', async () => {
    const l = await listen();
    l.answer = (_req, res) => res.end('inside');
    const port = new URL(l.url).port;
    const lookups: string[] = [];
    const resolve: Resolver = async (host) => {
      lookups.push(host);
      if (host === 'metadata.test') return [{ address: '169.254.169.254', family: 4 }];
      if (host === 'mapped.test') return [{ address: '::ffff:127.0.0.1', family: 6 }];
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const get = (policy: OutboundPolicy, url: string) =>
      request(url, { dispatcher: outboundDispatcher(policy, { resolve }), headersTimeout: 5000, bodyTimeout: 5000 });

    const names = ['evil.test', 'metadata.test', 'mapped.test'];
    const listed = new OutboundPolicy({ allow: names.map((n) => `http://${n}:${port}`) });
    for (const name of names) {
      const refused = await refusal(get(listed, `http://${name}:${port}/latest/meta-data/`));
      expect(refused.reason, name).toBe('internal-address');
      expect(refused.message).toContain(name);
    }
    expect(l.connections).toBe(0);
    // What callers see: a refusal for where the request goes (they fail for good), not a network failure (retried).
    const thrown = await get(listed, `http://evil.test:${port}/`).catch((e: unknown) => e);
    expect(policyRefusal(thrown)?.reason).toBe('internal-address');
    expect(policyRefusal(new Error('connect ECONNREFUSED', { cause: new Error('socket') }))).toBeUndefined();

    // Explicitly allowed to be internal: reached, with one lookup, made by the connection itself.
    lookups.length = 0;
    const inside = new OutboundPolicy({ allow: [`http://evil.test:${port}`], internal: ['evil.test'] });
    const res = await get(inside, `http://evil.test:${port}/`);
    expect(await res.body.text()).toBe('inside');
    expect(lookups).toEqual(['evil.test']);
    expect(l.requests).toHaveLength(1);

    // `localhost` on the list is explicit (the dev stack's and the tests' allow-lists name loopback so).
    const local = await request(`http://localhost:${port}/`, {
      dispatcher: outboundDispatcher(new OutboundPolicy({ allow: [`http://localhost:${port}`] })),
    });
    expect(await local.body.text()).toBe('inside');
  });

  it('does not follow a redirect', async () => {
    const target = await listen();
    const redirecting = await listen();
    redirecting.answer = (_req, res) => res.writeHead(302, { location: `${target.url}/secret` }).end();
    const policy = new OutboundPolicy({ allow: [redirecting.url, target.url] });
    const refused = await refusal(fetchBounded(`${redirecting.url}/a`, { policy, maxBytes: 1024, timeoutMs: 5000 }));
    expect(refused.reason).toBe('redirect');
    // As the process's dispatcher, Node's fetch (which follows by default) gets the 3xx itself and stops there;
    // undici's request never follows.
    permit({ allow: [redirecting.url, target.url] });
    installOutboundGuard();
    const viaFetch = await fetch(`${redirecting.url}/a`);
    expect(viaFetch.status).toBe(302);
    expect(viaFetch.headers.get('location')).toBeNull();
    const viaRequest = await request(`${redirecting.url}/a`);
    expect(viaRequest.statusCode).toBe(302);
    await viaRequest.body.dump();
    expect(target.requests).toHaveLength(0);
  });

  it('cuts a 64 MiB answer off at the bound while it streams, and refuses a declared one before reading', async () => {
    const l = await listen();
    const server = streaming(l, 64 * MiB);
    const policy = new OutboundPolicy({ allow: [l.url] });
    (globalThis as { gc?: () => void }).gc?.();
    const before = process.memoryUsage().rss;
    const refused = await refusal(fetchBounded(`${l.url}/big.crl`, { policy, maxBytes: 4 * MiB, timeoutMs: 20_000 }));
    expect(refused.reason).toBe('too-large');
    const grown = process.memoryUsage().rss - before;
    // What the server got out before the connection was dropped: the bound and the sockets' buffers, not 64 MiB.
    await new Promise((r) => setTimeout(r, 200));
    expect(server.written()).toBeLessThan(24 * MiB);
    expect(grown).toBeLessThan(40 * MiB);

    const declared = await listen();
    declared.answer = (_req, res) => {
      res.writeHead(200, { 'content-length': String(64 * MiB) });
      res.write(Buffer.alloc(1024));
    };
    expect(
      (
        await refusal(
          fetchBounded(`${declared.url}/`, { policy: new OutboundPolicy({ allow: [declared.url] }), maxBytes: 4 * MiB, timeoutMs: 5000 }),
        )
      ).reason,
    ).toBe('too-large');
  });

  it('gives up on a server that trickles at the total deadline, not an idle timeout', async () => {
    const l = await listen();
    trickling(l);
    const started = Date.now();
    const refused = await refusal(
      fetchBounded(`${l.url}/slow`, { policy: new OutboundPolicy({ allow: [l.url] }), maxBytes: MiB, timeoutMs: 800 }),
    );
    expect(refused.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('the process guard', () => {
  it('holds globalThis.fetch and undici to the allow-list once installed, and lets withGlobalFetchRefused refuse all', async () => {
    const allowed = await listen();
    const other = await listen();
    allowed.answer = (_req, res) => res.end('ok');
    const withdraw = permit({ allow: [allowed.url] });
    installOutboundGuard();
    expect(await (await fetch(`${allowed.url}/`)).text()).toBe('ok');
    expect((await refusal(fetch(`${other.url}/latest/meta-data/`))).reason).toBe('not-allowed');
    expect((await refusal(request(`${other.url}/`))).reason).toBe('not-allowed');
    expect(other.connections).toBe(0);
    // A permit withdrawn is no longer reachable.
    withdraw();
    expect((await refusal(fetch(`${allowed.url}/`))).reason).toBe('not-allowed');
    const real = globalThis.fetch;
    await expect(withGlobalFetchRefused(() => globalThis.fetch(`${allowed.url}/`))).rejects.toThrow(/refused/);
    expect(globalThis.fetch).toBe(real);
  });
});

describe('what a library fetches on its own', () => {
  it('a library that takes a fetch gets the bounded one: the worker’s RFC 3161 client over it', async () => {
    const l = await listen();
    const seal = await SandboxSeal.open(join(await mkdtemp(join(tmpdir(), 'esign-outbound-tsa-')), 'pki'));
    l.answer = (req, res) => {
      const body: Buffer[] = [];
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => {
        if (req.url === '/big') return void res.writeHead(200).end(Buffer.alloc(2 * MiB));
        if (req.url === '/moved') return void res.writeHead(302, { location: `${l.url}/tsa` }).end();
        void seal
          .timestampAnswer(Buffer.concat(body))
          .then((answer) => res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(answer));
      });
    };
    const fetchForTsa = boundedFetch({ maxBytes: MiB, timeoutMs: 5000, policy: new OutboundPolicy({ allow: [l.url] }) });
    const digest = new Uint8Array(32).fill(7);
    const token = await new HttpTimestampAuthority(`${l.url}/tsa`, { fetch: fetchForTsa }).timestamp(digest, 'SHA-256');
    expect(token.length).toBeGreaterThan(1000);
    await expect(new HttpTimestampAuthority(`${l.url}/big`, { fetch: fetchForTsa }).timestamp(digest, 'SHA-256')).rejects.toThrow(
      /more than 1048576 bytes/,
    );
    await expect(new HttpTimestampAuthority(`${l.url}/moved`, { fetch: fetchForTsa }).timestamp(digest, 'SHA-256')).rejects.toThrow(
      /redirect/,
    );
    expect(l.requests.map((r) => r.url)).toEqual(['/tsa', '/big', '/moved']);
  });

  it('with the guard installed, what @libpdf/core fetches on its own for a planted certificate is refused before it connects', async () => {
    const l = await listen();
    const planted = plantedPki(l.url);
    const pdf = await plantedPdf(planted.signer);
    const { tsa } = await timestampingCa('outbound', new Date(), 2, 1);
    installOutboundGuard();
    const doc = await PDF.load(pdf);
    // No withGlobalFetchRefused here: the AIA walk runs with Node's own fetch, which the guard holds.
    const { warnings } = await doc.addArchivalData({
      timestampAuthority: { timestamp: async (digest) => new Uint8Array(await tsa.stamp(digest)) },
      revocationProvider: { getOCSP: async () => null, getCRL: async () => null },
    });
    expect(warnings.map((w) => w.code)).toContain('CHAIN_INCOMPLETE');
    expect(l.connections).toBe(0);
  });
});
