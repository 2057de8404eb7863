import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EsignClient } from '../../src/esign/client.js';
import { EsignApiError } from '../../src/esign/errors.js';
import { ProblemDetails, type CreateTransactionRequest } from '../../src/esign/schemas.js';
import { writeHashed } from '../../src/util/streams.js';
import { samplePdfFiles, startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';
import { pdfPageTexts, readZipEntries } from '../support/zip.js';

const JWT_SECRET = 'test-secret-that-is-at-least-32-characters-long';
let sb: TestSandbox;
let work: string;

beforeAll(async () => {
  sb = await startTestSandbox({ jwtSecret: JWT_SECRET, maxUploadBytes: 200_000 });
  work = await mkdtemp(join(tmpdir(), 'sandbox-api-'));
});
afterAll(async () => {
  await sb?.close();
});

/** A raw call that bypasses the client's own validation, to test the server's. */
async function raw(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await request(`${sb.running.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sb.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: text ? (JSON.parse(text) as unknown) : undefined };
}

function problem(res: { headers: Record<string, unknown>; json: unknown }) {
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  return ProblemDetails.parse(res.json);
}

async function apiError(promise: Promise<unknown>): Promise<EsignApiError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EsignApiError);
  return err as EsignApiError;
}

describe('authentication', () => {
  it('rejects a missing, forged or expired token with 401 problem+json', async () => {
    const missing = await raw('GET', '/transactions', undefined, { authorization: '' });
    expect(missing.status).toBe(401);
    expect(problem(missing).detail).toContain('missing bearer token');

    const forged = await new SignJWT({ org: 'dev-org' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('another-secret-another-secret-another'));
    expect((await raw('GET', '/transactions', undefined, { authorization: `Bearer ${forged}` })).status).toBe(401);

    const expired = await new SignJWT({ org: 'dev-org' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(JWT_SECRET));
    const res = await raw('GET', '/transactions', undefined, { authorization: `Bearer ${expired}` });
    expect(res.status).toBe(401);
    expect(problem(res).detail).toContain('invalid or expired');
  });

  it('accepts a token minted elsewhere with the shared secret, and scopes data to its organization', async () => {
    const request = await uploadedRequest(sb.client);
    const created = await sb.client.createTransaction(request);
    const otherToken = await new SignJWT({ org: 'other-org' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(JWT_SECRET));
    const other = new EsignClient({ baseUrl: sb.running.url, token: otherToken });
    try {
      const err = await apiError(other.getTransaction(created.id!));
      expect(err.status).toBe(404);
      expect((await other.listTransactions()).data.map((t) => t.id)).not.toContain(created.id);
      // Another organization cannot use this one's uploads either.
      const err2 = await apiError(other.createTransaction(request));
      expect(err2.status).toBe(422);
      expect(err2.message).toContain('documents[0].StoragePath');
    } finally {
      await other.close();
    }
  });
});

describe('POST /documents/upload', () => {
  it('stores real PDFs under unique <folder>/<name>.pdf paths, in the envelope shape', async () => {
    const [a] = await samplePdfFiles(['Same name']);
    const first = await sb.client.uploadDocuments([{ path: a!, fileName: 'contract.pdf' }]);
    const second = await sb.client.uploadDocuments([{ path: a!, fileName: 'contract.pdf' }]);
    expect(first[0]!.StoragePath).toMatch(/^[0-9a-f-]{36}\/contract\.pdf$/);
    expect(first[0]!.docId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second[0]!.StoragePath).not.toBe(first[0]!.StoragePath);
  });

  it('answers in the plain-array shape when configured to', async () => {
    const arraySandbox = await startTestSandbox({ uploadShape: 'array' });
    try {
      const [a, b] = await samplePdfFiles(['One', 'Two']);
      const uploaded = await arraySandbox.client.uploadDocuments([{ path: a! }, { path: b! }]);
      expect(uploaded.map((u) => u.file)).toEqual([a!.split('/').pop(), b!.split('/').pop()]);
      expect(uploaded.every((u) => u.docId === undefined)).toBe(true);
    } finally {
      await arraySandbox.close();
    }
  });

  it('refuses files that are not PDFs, and stores nothing from a batch with one bad file', async () => {
    const fake = join(work, 'fake.pdf');
    await writeFile(fake, '%PDF-1.7\nthis is not really a pdf');
    const empty = join(work, 'empty.pdf');
    await writeFile(empty, '');
    const [good] = await samplePdfFiles(['Good']);
    for (const path of [fake, empty]) {
      const err = await apiError(sb.client.uploadDocuments([{ path: good! }, { path }]));
      expect(err.status).toBe(422);
      expect(err.problem?.errors?.[0]?.pointer).toBe('/files/1');
    }
  });

  it('refuses a file over the size limit with 413', async () => {
    const big = join(work, 'big.pdf');
    await writeFile(big, Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(300_000, 32)]));
    const err = await apiError(sb.client.uploadDocuments([{ path: big }]));
    expect(err.status).toBe(413);
  });

  it('refuses a JSON body with 415', async () => {
    const res = await raw('POST', '/documents/upload', { files: [] });
    expect(res.status).toBe(415);
    problem(res);
  });
});

describe('transactions', () => {
  it('creates (201, fuller form), fills page counts, and never returns signer passwords', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2 });
    request.participants[0]!.authenticationType = 'personal-password';
    request.participants[0]!.personalPassword = 'hunter2-signer-secret';
    request.evault = '<vault_provider_A>';
    const res = await raw('POST', '/transactions', request);
    expect(res.status).toBe(201);
    const record = res.json as Record<string, unknown> & { id: string; esignId: string; documents: { pages: number }[] };
    expect(record.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.esignId).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.status).toBe('esign_pending');
    expect(record.documents[0]!.pages).toBe(1);
    expect(res.text).not.toContain('hunter2-signer-secret');
    expect((await sb.client.getTransaction(record.id)).referenceId).toBe(request.referenceId);
  });

  it.each<[string, (r: CreateTransactionRequest) => void, string]>([
    ['a missing status', (r) => delete (r as Partial<CreateTransactionRequest>).status, '/status'],
    ['a status outside the request values', (r) => (r.status = 'completed' as never), '/status'],
    ['a subject over 255 characters', (r) => (r.emailSubject = 'x'.repeat(256)), '/emailSubject'],
    ['a tag whose signer is no participant', (r) => (r.documents[0]!.tags[0]!.signerId = randomUUID()), '/documents/0/tags/0/signerId'],
    ['an unknown tag type', (r) => (r.documents[0]!.tags[0]!.type = 'STAMP' as never), '/documents/0/tags/0/type'],
    [
      'an unknown authentication type',
      (r) => (r.participants[0]!.authenticationType = 'sms' as never),
      '/participants/0/authenticationType',
    ],
    ['a StoragePath never uploaded', (r) => (r.documents[0]!.StoragePath = `${randomUUID()}/nope.pdf`), '/documents/0/StoragePath'],
    ['a tag on a page the PDF does not have', (r) => (r.documents[0]!.tags[0]!.page = 3), '/documents/0/tags/0/page'],
    ['no participants', (r) => (r.participants = []), '/participants'],
  ])('rejects %s with 422 naming the field, and writes nothing', async (_name, mutate, pointer) => {
    const request = await uploadedRequest(sb.client);
    mutate(request);
    const before = (await sb.client.listTransactions()).total;
    const res = await raw('POST', '/transactions', request);
    expect(res.status).toBe(422);
    expect(problem(res).errors?.map((e) => e.pointer)).toContain(pointer);
    expect((await sb.client.listTransactions()).total).toBe(before);
  });

  it('rejects malformed JSON with 400 and another content type with 415', async () => {
    const malformed = await raw('POST', '/transactions', '{"documents": [', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    problem(malformed);
    const text = await raw('POST', '/transactions', 'status=draft', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    problem(text);
  });

  it('answers 404 problem+json for an unknown transaction', async () => {
    const res = await raw('GET', `/transactions/${randomUUID()}`);
    expect(res.status).toBe(404);
    problem(res);
  });

  it('replaces a draft with PUT (201), keeping create-only fields, and requires referenceId', async () => {
    const request = await uploadedRequest(sb.client, { status: 'draft' });
    request.evault = '<vault_provider_B>';
    const created = await sb.client.createTransaction(request);
    expect(created.status).toBe('draft');

    const { evault: _e, ...update } = request;
    const missingRef = await raw('PUT', `/transactions/${created.id}`, { ...update, referenceId: undefined });
    expect(missingRef.status).toBe(422);
    expect(problem(missingRef).errors?.map((e) => e.pointer)).toContain('/referenceId');

    const res = await raw('PUT', `/transactions/${created.id}`, {
      ...update,
      referenceId: request.referenceId,
      status: 'esign_pending',
      emailSubject: 'Please sign',
    });
    expect(res.status).toBe(201);
    const updated = await sb.client.getTransaction(created.id!);
    expect(updated).toMatchObject({ status: 'esign_pending', emailSubject: 'Please sign', evault: '<vault_provider_B>' });
  });

  it('lists by status with limit, offset and total', async () => {
    const status = 'draft';
    const mine: string[] = [];
    for (let i = 0; i < 3; i++) mine.push((await sb.client.createTransaction(await uploadedRequest(sb.client, { status }))).id!);
    const all = await sb.client.listTransactions({ status, limit: 500 });
    expect(all.data.every((t) => t.status === status)).toBe(true);
    expect(all.total).toBe(all.data.length);
    expect(all.data.slice(0, 3).map((t) => t.id)).toEqual([...mine].reverse()); // newest first
    const page = await sb.client.listTransactions({ status, limit: 2, offset: 1 });
    expect(page.data.map((t) => t.id)).toEqual([mine[1], mine[0]]);
    expect(page.total).toBe(all.total);
    // A malformed query is a 400 naming the parameter (docs/spec-gaps.md, row 9).
    for (const query of ['limit=0', 'status=', 'offset=-1']) {
      const bad = await raw('GET', `/transactions?${query}`);
      expect(bad.status, query).toBe(400);
      expect((bad.json as { errors: { pointer: string }[] }).errors[0]!.pointer).toBe(`/${query.split('=')[0]}`);
    }
  });

  it('refuses __proto__ keys anywhere in a body with a message that says so', async () => {
    const request = await uploadedRequest(sb.client);
    const body = JSON.stringify(request).replace('"customData":{}', '"customData":{"__proto__":{"admin":true}}');
    expect(body).toContain('__proto__');
    const res = await raw('POST', '/transactions', body, { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect((res.json as { detail: string }).detail).toMatch(/"__proto__".*refused.*rename the key/);
  });
});

describe('signing, completion and download', () => {
  it('serves the completed ZIP only once completed, with stamped, valid PDFs', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2, documents: 2 });
    const created = await sb.client.createTransaction(request);
    const early = await apiError(sb.client.downloadCompletedDocuments(created.id!));
    expect(early.status).toBe(409);
    const otherType = await raw('GET', `/transactions/${created.id}/documents?type=original`);
    expect(otherType.status).toBe(400);

    for (const p of request.participants) {
      const res = await raw('POST', `/_sandbox/transactions/${created.id}/participants/${p.id}/sign`, {});
      expect(res.status).toBe(200);
    }
    expect((await sb.client.getTransaction(created.id!)).status).toBe('completed');

    const download = await sb.client.downloadCompletedDocuments(created.id!);
    const target = join(work, `${created.id}.zip`);
    const written = await writeHashed(download.body, target);
    expect(written.bytes).toBe(download.contentLength);
    const inspected = (await raw('GET', `/_sandbox/transactions/${created.id}`)).json as { zip: { sha256: string } };
    expect(written.sha256).toBe(inspected.zip.sha256);

    const entries = await readZipEntries(target);
    // Documents in order, then the evidence (docs/spec-gaps.md, row 41).
    expect([...entries.keys()]).toEqual(['Agreement 1.pdf', 'Agreement 2.pdf', 'certificate-of-completion.pdf', 'audit-trail.json']);
    for (const pdf of [entries.get('Agreement 1.pdf')!, entries.get('Agreement 2.pdf')!]) {
      const [page0] = await pdfPageTexts(pdf);
      expect(page0).toContain('Signer1 Tester');
      expect(page0).toContain('Signer2 Tester');
      const today = new Date();
      const ddmmyyyy = `${String(today.getUTCDate()).padStart(2, '0')}/${String(today.getUTCMonth() + 1).padStart(2, '0')}/${today.getUTCFullYear()}`;
      expect(page0).toContain(ddmmyyyy);
    }
    // Completed transactions cannot be replaced.
    const replace = await raw('PUT', `/transactions/${created.id}`, request);
    expect(replace.status).toBe(409);
  });

  it('enforces signing order', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2, signingOrder: true });
    const created = await sb.client.createTransaction(request);
    const [first, second] = request.participants;
    const outOfTurn = await raw('POST', `/_sandbox/transactions/${created.id}/participants/${second!.id}/sign`, {});
    expect(outOfTurn.status).toBe(409);
    expect(problem(outOfTurn).detail).toContain("Signer1 Tester's turn");
    expect((await raw('POST', `/_sandbox/transactions/${created.id}/participants/${first!.id}/sign`, {})).status).toBe(200);
    expect((await raw('POST', `/_sandbox/transactions/${created.id}/participants/${second!.id}/sign`, {})).json).toEqual({
      completed: true,
    });
  });

  it('takes a correction after a signature, keeping what was signed, and refuses one that changes it', async () => {
    const request = await uploadedRequest(sb.client, { signers: 3, documents: 2 });
    const created = await sb.client.createTransaction(request);
    const [first, second, third] = request.participants;
    expect((await raw('POST', `/_sandbox/transactions/${created.id}/participants/${first!.id}/sign`, {})).status).toBe(200);
    const put = (body: CreateTransactionRequest) => raw('PUT', `/transactions/${created.id}`, { ...body, status: 'esign_pending' });
    const refused = async (body: CreateTransactionRequest, why: string) => {
      const res = await put(body);
      expect(res.status).toBe(409);
      expect(problem(res).detail).toContain(why);
    };
    // What the first signer signed cannot change: their record, their tags, the documents; nor can it go back to draft.
    const renamed = request.participants.map((p) => (p.id === first!.id ? { ...p, email: 'someone.else@example.com' } : p));
    await refused({ ...request, participants: renamed }, `participant ${first!.id} cannot change`);
    const withoutFirst = request.documents.map((d) => ({ ...d, tags: d.tags.filter((t) => t.signerId !== first!.id) }));
    await refused(
      { ...request, participants: request.participants.slice(1), documents: withoutFirst },
      `participant ${first!.id} cannot be removed`,
    );
    const moved = request.documents.map((d) => ({ ...d, tags: d.tags.map((t) => (t.signerId === first!.id ? { ...t, x: t.x + 1 } : t)) }));
    await refused({ ...request, documents: moved }, `the tags of participant ${first!.id} cannot change`);
    await refused({ ...request, documents: request.documents.slice(1) }, 'the documents can no longer change');
    // Found by a cold attack: any field of a signed tag or of a document, and a tag laid over a signature.
    const tiny = request.documents.map((d) => ({
      ...d,
      tags: d.tags.map((t) => (t.signerId === first!.id ? { ...t, fontSize: 0.5 } : t)),
    }));
    await refused({ ...request, documents: tiny }, `the tags of participant ${first!.id} cannot change`);
    await refused(
      { ...request, documents: request.documents.map((d) => ({ ...d, visible: false })) },
      'the documents can no longer change',
    );
    const signedTag = request.documents[0]!.tags.find((t) => t.signerId === first!.id)!;
    const over = request.documents.map((d, i) =>
      i === 0 ? { ...d, tags: [...d.tags, { ...signedTag, type: 'TEXTANNOT' as const, signerId: second!.id }] } : d,
    );
    await refused({ ...request, documents: over }, `a tag of participant ${second!.id} would lie over a signed one`);
    expect((await raw('PUT', `/transactions/${created.id}`, { ...request, status: 'draft' })).status).toBe(409);

    // The second signer is removed (with their tags, which shifts the third's) and a new one takes the third's place.
    const replacement = { ...third!, id: randomUUID(), email: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper' };
    const corrected: CreateTransactionRequest = {
      ...request,
      participants: [first!, replacement],
      documents: request.documents.map((d) => ({
        ...d,
        tags: d.tags
          .filter((t) => t.signerId !== second!.id)
          .map((t) => (t.signerId === third!.id ? { ...t, signerId: replacement.id } : t)),
      })),
    };
    expect((await put(corrected)).status).toBe(201);
    // The removed and the replaced can no longer sign; the first stays signed, and the replacement completes it.
    for (const gone of [second!, third!])
      expect((await raw('POST', `/_sandbox/transactions/${created.id}/participants/${gone.id}/sign`, {})).status).toBe(404);
    expect((await raw('POST', `/_sandbox/transactions/${created.id}/participants/${replacement.id}/sign`, {})).json).toEqual({
      completed: true,
    });
    const target = join(work, `${created.id}-corrected.zip`);
    await writeHashed((await sb.client.downloadCompletedDocuments(created.id!)).body, target);
    const [page0] = await pdfPageTexts((await readZipEntries(target)).get('Agreement 1.pdf')!);
    expect(page0).toContain('Signer1 Tester');
    // (The sample page clips the third signer's stamp at its edge: the first name is what fits.)
    expect(page0).toContain('Grace');
    expect(page0).not.toMatch(/Signer[23]/);
  });

  it('does not sign drafts or cancelled transactions', async () => {
    const draft = await uploadedRequest(sb.client, { status: 'draft' });
    const d = await sb.client.createTransaction(draft);
    expect((await raw('POST', `/_sandbox/transactions/${d.id}/participants/${draft.participants[0]!.id}/sign`, {})).status).toBe(409);
    const pending = await uploadedRequest(sb.client);
    const p = await sb.client.createTransaction(pending);
    expect((await raw('POST', `/_sandbox/transactions/${p.id}/cancel`)).status).toBe(200);
    expect((await sb.client.getTransaction(p.id!)).status).toBe('cancelled');
    expect((await raw('POST', `/_sandbox/transactions/${p.id}/participants/${pending.participants[0]!.id}/sign`, {})).status).toBe(409);
  });
});

describe('test control: completing with a supplied ZIP', () => {
  it('streams the ZIP to disk, completes the transaction, and serves exactly those bytes', async () => {
    const request = await uploadedRequest(sb.client);
    const created = await sb.client.createTransaction(request);
    const zip = Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(300_000, 7)]);
    const put = await raw('PUT', `/_sandbox/transactions/${created.id}/completed-zip`, zip.toString('latin1'), {
      'content-type': 'application/zip',
    });
    expect(put.status).toBe(200);
    const download = await sb.client.downloadCompletedDocuments(created.id!);
    const written = await writeHashed(download.body, join(work, 'supplied.zip'));
    expect(written.sha256).toBe(
      createHash('sha256')
        .update(Buffer.from(zip.toString('latin1'), 'latin1'))
        .digest('hex'),
    );
    const again = await raw('PUT', `/_sandbox/transactions/${created.id}/completed-zip`, 'x', { 'content-type': 'application/zip' });
    expect(again.status).toBe(409);
  });
});

describe('POST /iframe-request', () => {
  it('returns a signing URL on the iframe host for participants of the transaction', async () => {
    const request = await uploadedRequest(sb.client, { signers: 2 });
    const created = await sb.client.createTransaction(request);
    const url = await sb.client.createIframeUrl({
      type: 'esign',
      style: { primaryColor: 'ff0000' },
      data: { esignId: created.esignId!, participantIds: [request.participants[1]!.id] },
    });
    expect(url.startsWith(`${sb.running.url}/sign/`)).toBe(true);
    const page = await request_(url);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Agreement 1');

    const stranger = await raw('POST', '/iframe-request', {
      type: 'esign',
      data: { esignId: created.esignId, participantIds: [randomUUID()] },
    });
    expect(stranger.status).toBe(422);
    expect(problem(stranger).errors?.[0]?.pointer).toBe('/data/participantIds/0');
    const unknown = await raw('POST', '/iframe-request', { type: 'esign', data: { esignId: randomUUID(), participantIds: ['x'] } });
    expect(unknown.status).toBe(404);
  });
});

async function request_(url: string) {
  const res = await request(url);
  return { status: res.statusCode, text: await res.body.text() };
}

describe('persistence and faults', () => {
  it('keeps transactions, uploads and completed files across a restart', async () => {
    const own = await startTestSandbox();
    try {
      const request = await uploadedRequest(own.client);
      const created = await own.client.createTransaction(request);
      await own.restart();
      const client = new EsignClient({ baseUrl: own.running.url, token: own.token });
      try {
        expect((await client.getTransaction(created.id!)).referenceId).toBe(request.referenceId);
        // The upload survived too: it can be used for a new transaction.
        await expect(client.createTransaction({ ...request, referenceId: 'again' })).resolves.toMatchObject({ status: 'esign_pending' });
        await own.control.signAs(created.id!, request.participants[0]!.id);
        await own.restart();
        const fresh = new EsignClient({ baseUrl: own.running.url, token: own.token });
        const zip = await fresh.downloadCompletedDocuments(created.id!);
        const hash = createHash('sha256');
        for await (const chunk of zip.body) hash.update(chunk as Buffer);
        expect(hash.digest('hex')).toBe((await own.control.inspect(created.id!))?.zip?.sha256);
        await fresh.close();
      } finally {
        await client.close();
      }
    } finally {
      await own.close();
    }
  });

  it('injects 429 with Retry-After, 5xx, resets and truncated ZIPs when asked, reproducibly by seed', async () => {
    const own = await startTestSandbox();
    try {
      const request = await uploadedRequest(own.client);
      const created = await own.client.createTransaction(request);
      await own.control.signAs(created.id!, request.participants[0]!.id);

      own.running.faults.configure({ rateLimitRate: 1, retryAfterSeconds: 3 });
      const limited = await apiError(own.client.getTransaction(created.id!));
      expect(limited).toMatchObject({ status: 429, retryable: true, retryAfterMs: 3000 });

      own.running.faults.configure({ error5xxRate: 1 });
      expect((await apiError(own.client.getTransaction(created.id!))).retryable).toBe(true);

      own.running.faults.configure({ resetRate: 1 });
      expect((await apiError(own.client.getTransaction(created.id!))).kind).toBe('network');

      own.running.faults.configure({ truncateZipRate: 1 });
      const download = await own.client.downloadCompletedDocuments(created.id!);
      await expect(writeHashed(download.body, join(work, 'truncated.zip'))).rejects.toThrow();

      const decisions = (seed: number) => {
        own.running.faults.configure({ error5xxRate: 0.3, seed });
        return Array.from({ length: 20 }, () => own.running.faults.forRequest());
      };
      expect(decisions(42)).toEqual(decisions(42));
      expect(decisions(42)).not.toEqual(decisions(43));

      own.running.faults.configure({});
      await expect(own.client.getTransaction(created.id!)).resolves.toMatchObject({ status: 'completed' });
    } finally {
      await own.close();
    }
  });
});
