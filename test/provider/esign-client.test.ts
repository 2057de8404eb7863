import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EsignClient } from '../../src/esign/client.js';
import { EsignApiError } from '../../src/esign/errors.js';
import { createRequest } from '../support/fixtures.js';
import { readBody, readForm, sendJson, StubHttpServer } from '../support/stub-http.js';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ';

let stub: StubHttpServer;
let client: EsignClient;
let dir: string;

beforeAll(async () => {
  stub = await StubHttpServer.start();
  dir = await mkdtemp(join(tmpdir(), 'esign-client-'));
});
afterAll(async () => {
  await stub.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  stub.requests.length = 0;
  client = new EsignClient({ baseUrl: stub.url, token: TOKEN, headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000 });
});
afterEach(async () => {
  await client.close();
});

async function expectError(promise: Promise<unknown>): Promise<EsignApiError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EsignApiError);
  return err as EsignApiError;
}

async function pdfFile(name: string, size: number): Promise<string> {
  const path = join(dir, name);
  const header = Buffer.from('%PDF-1.7\n');
  const body = Buffer.alloc(size - header.length, name.charCodeAt(0));
  await writeFile(path, Buffer.concat([header, body]));
  return path;
}

describe('uploadDocuments', () => {
  it('sends each file as a multipart part "files" and reads the envelope shape', async () => {
    const a = await pdfFile('a.pdf', 4_000);
    const b = await pdfFile('b.pdf', 70_000);
    const received: { name: string; size: number; type: string; sha: string }[] = [];
    stub.handler = async (req, res) => {
      const form = await readForm(req);
      for (const part of form.getAll('files')) {
        const file = part as File;
        const bytes = Buffer.from(await file.arrayBuffer());
        received.push({ name: file.name, size: file.size, type: file.type, sha: createHash('sha256').update(bytes).digest('hex') });
      }
      sendJson(res, 200, { data: received.map((f) => ({ StoragePath: `folder-9/${f.name}`, docId: randomUUID() })) });
    };
    const uploaded = await client.uploadDocuments([{ path: a }, { path: b, fileName: 'renamed.pdf' }]);

    expect(received.map((f) => f.name)).toEqual(['a.pdf', 'renamed.pdf']);
    expect(received[1]?.size).toBe(70_000);
    expect(received[0]?.type).toBe('application/pdf');
    const sha = createHash('sha256');
    await pipeline(createReadStream(b), sha);
    expect(received[1]?.sha).toBe(sha.digest('hex'));
    expect(uploaded).toHaveLength(2);
    expect(uploaded[0]).toMatchObject({ StoragePath: 'folder-9/a.pdf', docId: expect.any(String) as string });
    const req = stub.requests[0];
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/documents/upload');
    expect(req?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
  });

  it('reads the plain-array shape', async () => {
    const a = await pdfFile('plain.pdf', 1_000);
    stub.handler = (_req, res) => sendJson(res, 200, [{ file: 'plain.pdf', status: 'uploaded', StoragePath: 'f1/plain.pdf' }]);
    await expect(client.uploadDocuments([{ path: a }])).resolves.toEqual([{ file: 'plain.pdf', StoragePath: 'f1/plain.pdf' }]);
  });

  it('rejects a response with fewer storage paths than files as an invalid response', async () => {
    const a = await pdfFile('one.pdf', 1_000);
    const b = await pdfFile('two.pdf', 1_000);
    stub.handler = (_req, res) => sendJson(res, 200, { data: [{ StoragePath: 'f/one.pdf', docId: randomUUID() }] });
    const err = await expectError(client.uploadDocuments([{ path: a }, { path: b }]));
    expect(err.kind).toBe('invalid_response');
    expect(err.retryable).toBe(false);
  });

  it('refuses a file that cannot be read before sending anything', async () => {
    const err = await expectError(client.uploadDocuments([{ path: join(dir, 'missing.pdf') }]));
    expect(err.kind).toBe('invalid_request');
    expect(stub.requests).toHaveLength(0);
  });
});

describe('transactions', () => {
  it('creates a transaction and reads the full response form with id and esignId', async () => {
    const request = createRequest();
    let body: unknown;
    stub.handler = async (req, res) => {
      body = JSON.parse((await readBody(req)).toString('utf8'));
      sendJson(res, 201, { ...request, id: randomUUID(), esignId: randomUUID(), status: 'esign_pending' });
    };
    const record = await client.createTransaction(request);
    expect(body).toEqual(request);
    expect(stub.requests[0]?.headers['content-type']).toBe('application/json');
    expect(record.id).toEqual(expect.any(String));
    expect(record.esignId).toEqual(expect.any(String));
    expect(record.participants[0]?.id).toBe(request.participants[0]?.id);
  });

  it('reads the short create form without ids', async () => {
    const request = createRequest();
    stub.handler = (_req, res) =>
      sendJson(res, 201, {
        status: 'esign_pending',
        documents: [{ title: 'Contract', StoragePath: 'folder-1/contract.pdf', sessionType: 'esign' }],
        participants: request.participants.map(({ id, email, firstName, lastName }) => ({ id, email, firstName, lastName })),
      });
    const record = await client.createTransaction(request);
    expect(record.id).toBeUndefined();
    expect(record.esignId).toBeUndefined();
    expect(record.documents[0]?.StoragePath).toBe('folder-1/contract.pdf');
  });

  it('refuses an invalid request before sending it, naming the field', async () => {
    const request = createRequest();
    request.documents[0]!.tags[0]!.signerId = 'nobody';
    request.emailSubject = 'x'.repeat(256);
    const err = await expectError(client.createTransaction(request));
    expect(err.kind).toBe('invalid_request');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('documents[0].tags[0].signerId');
    expect(err.message).toContain('emailSubject');
    expect(stub.requests).toHaveLength(0);
  });

  it('gets, replaces (PUT) and lists transactions on the chosen paths', async () => {
    const id = randomUUID();
    const request = createRequest();
    const record = { ...request, id, esignId: randomUUID() };
    stub.handler = async (req, res) => {
      if (req.method === 'PUT') {
        const body = JSON.parse((await readBody(req)).toString('utf8')) as typeof request;
        sendJson(res, 201, { ...record, ...body });
      } else if (req.url?.startsWith('/transactions?')) {
        sendJson(res, 200, { data: [record], total: 7 });
      } else {
        sendJson(res, 200, record);
      }
    };
    await expect(client.getTransaction(id)).resolves.toMatchObject({ id, status: 'esign_pending' });
    const updated = await client.updateTransaction(id, { ...request, referenceId: request.referenceId!, status: 'draft' });
    expect(updated.status).toBe('draft');
    const list = await client.listTransactions({ status: 'esign_pending', limit: 10, offset: 20 });
    expect(list.total).toBe(7);
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET /transactions/${id}`,
      `PUT /transactions/${id}`,
      'GET /transactions?limit=10&offset=20&status=esign_pending',
    ]);
  });

  it('requires referenceId on update (spec 4.4)', async () => {
    const { referenceId: _omitted, ...withoutRef } = createRequest();
    const err = await expectError(client.updateTransaction(randomUUID(), withoutRef as never));
    expect(err.kind).toBe('invalid_request');
    expect(err.message).toContain('referenceId');
  });

  it('asks for an iframe URL', async () => {
    const esignId = randomUUID();
    let body: unknown;
    stub.handler = async (req, res) => {
      body = JSON.parse((await readBody(req)).toString('utf8'));
      sendJson(res, 200, { url: 'https://sign.example.test/s/abc' });
    };
    const url = await client.createIframeUrl({
      type: 'esign',
      style: { primaryColor: '#112233', background: 'ffffff' },
      data: { esignId, participantIds: ['p1'] },
    });
    expect(url).toBe('https://sign.example.test/s/abc');
    expect(body).toEqual({
      type: 'esign',
      style: { primaryColor: '#112233', background: 'ffffff' },
      data: { esignId, participantIds: ['p1'] },
    });
  });

  it('refuses a dot segment as an id before sending: `..` would climb out of /transactions/', async () => {
    for (const id of ['.', '..']) {
      const err = await expectError(client.getTransaction(id));
      expect(err.kind).toBe('invalid_request');
    }
    expect(stub.requests).toHaveLength(0);
  });

  it('keeps a base URL path prefix', async () => {
    const prefixed = new EsignClient({ baseUrl: `${stub.url}/api/v2/`, token: TOKEN });
    stub.handler = (_req, res) => sendJson(res, 200, { data: [], total: 0 });
    await prefixed.listTransactions();
    await prefixed.close();
    expect(stub.requests[0]?.url).toBe('/api/v2/transactions?limit=50&offset=0');
  });

  it('asks a token function for each request, so expiring tokens can be refreshed', async () => {
    let n = 0;
    const refreshing = new EsignClient({ baseUrl: stub.url, token: () => `token-${++n}` });
    stub.handler = (_req, res) => sendJson(res, 200, { data: [], total: 0 });
    await refreshing.listTransactions();
    await refreshing.listTransactions();
    await refreshing.close();
    expect(stub.requests.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });
});

describe('error classification', () => {
  it.each([
    [500, true],
    [502, true],
    [503, true],
    [408, true],
    [429, true],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [409, false],
    [422, false],
  ])('HTTP %i is retryable: %s', async (status, retryable) => {
    stub.handler = (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ type: 'about:blank', title: 'Scripted', status, detail: `scripted ${status}` }));
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.kind).toBe('http');
    expect(err.status).toBe(status);
    expect(err.retryable).toBe(retryable);
    expect(err.problem?.detail).toBe(`scripted ${status}`);
    expect(err.message).toContain(`HTTP ${status}: Scripted: scripted ${status}`);
  });

  it('honours Retry-After in seconds and as an HTTP date', async () => {
    stub.handler = (_req, res) => {
      res.writeHead(429, { 'retry-after': '7' });
      res.end();
    };
    expect((await expectError(client.getTransaction(randomUUID()))).retryAfterMs).toBe(7_000);
    const at = new Date(Date.now() + 30_000).toUTCString();
    stub.handler = (_req, res) => {
      res.writeHead(503, { 'retry-after': at });
      res.end('busy');
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.retryAfterMs).toBeGreaterThan(20_000);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(err.message).toContain('HTTP 503: busy');
  });

  it('reports a response outside the contract as invalid, naming the field', async () => {
    stub.handler = (_req, res) => sendJson(res, 200, { status: 'completed', documents: [{ title: 'x' }], participants: [] });
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.kind).toBe('invalid_response');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('documents[0].StoragePath');
  });

  it('reports a non-JSON success body as invalid', async () => {
    stub.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.kind).toBe('invalid_response');
    expect(err.retryable).toBe(false);
  });

  it('stops reading a JSON answer at its bound instead of holding it whole', async () => {
    // An endless answer (no Content-Length): the old client read it to the end, or until memory ran out.
    let sent = 0;
    stub.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const more = () => {
        while (sent < 256 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (sent < 256 * 1024 * 1024) res.once('drain', more);
        else res.end('{}');
      };
      res.write('{"x":"');
      more();
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.kind).toBe('invalid_response');
    expect(err.message).toMatch(/over 8388608 bytes/);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });

  it('treats a connection reset as a retryable network error', async () => {
    stub.handler = (req) => {
      req.socket.destroy();
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.kind).toBe('network');
    expect(err.retryable).toBe(true);
  });

  it('treats a refused connection as a retryable network error', async () => {
    const other = await StubHttpServer.start();
    const url = other.url;
    await other.close();
    const closed = new EsignClient({ baseUrl: url, token: TOKEN });
    const err = await expectError(closed.getTransaction(randomUUID()));
    await closed.close();
    expect(err.kind).toBe('network');
    expect(err.retryable).toBe(true);
  });

  it('treats a provider that never answers as a retryable timeout', async () => {
    stub.handler = () => undefined; // never responds
    const impatient = new EsignClient({ baseUrl: stub.url, token: TOKEN, headersTimeoutMs: 300 });
    const err = await expectError(impatient.getTransaction(randomUUID()));
    await impatient.close();
    expect(err.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
  });

  it('never puts the bearer token in an error, even when the provider echoes it', async () => {
    stub.handler = (req, res) => {
      res.writeHead(401, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Unauthorized', detail: `token ${req.headers.authorization} is not valid` }));
    };
    const err = await expectError(client.getTransaction(randomUUID()));
    expect(err.status).toBe(401);
    const everything = `${err.message}\n${err.stack}\n${JSON.stringify(err)}\n${JSON.stringify(err.problem)}`;
    expect(everything).not.toContain(TOKEN);
    expect(everything).toContain('[REDACTED]');

    stub.handler = (req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`upstream said: ${req.headers.authorization}`);
    };
    const err2 = await expectError(client.getTransaction(randomUUID()));
    expect(`${err2.message}\n${err2.stack}`).not.toContain(TOKEN);
  });
});

describe('downloadCompletedDocuments', () => {
  it('streams a 50 MB ZIP to disk with its bytes intact', async () => {
    const size = 50 * 1024 * 1024;
    const chunk = 64 * 1024;
    const expected = createHash('sha256');
    // Deterministic, non-repeating content generated on the fly on both sides.
    const block = (i: number) =>
      createHash('sha512')
        .update(String(i))
        .digest('hex')
        .repeat(chunk / 128);
    for (let i = 0; i < size / chunk; i++) expected.update(block(i));
    stub.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': String(size) });
      Readable.from(
        (function* () {
          for (let i = 0; i < size / chunk; i++) yield Buffer.from(block(i));
        })(),
      ).pipe(res);
    };
    const id = randomUUID();
    const download = await client.downloadCompletedDocuments(id);
    expect(download.contentLength).toBe(size);
    expect(download.contentType).toBe('application/zip');
    const target = join(dir, 'completed.zip');
    const actual = createHash('sha256');
    await pipeline(
      download.body,
      async function* (source: AsyncIterable<Buffer>) {
        for await (const c of source) {
          actual.update(c);
          yield c;
        }
      },
      createWriteStream(target),
    );
    expect((await stat(target)).size).toBe(size);
    expect(actual.digest('hex')).toBe(expected.digest('hex'));
    expect(stub.requests[0]?.url).toBe(`/transactions/${id}/documents?type=completed`);
  });

  it('reports 409 (not completed yet) as a non-retryable HTTP error', async () => {
    stub.handler = (_req, res) => {
      res.writeHead(409, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Conflict', detail: 'transaction is not completed' }));
    };
    const err = await expectError(client.downloadCompletedDocuments(randomUUID()));
    expect(err.status).toBe(409);
    expect(err.retryable).toBe(false);
  });
});
