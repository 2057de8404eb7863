// The sandbox's RFC 3161 time-stamping authority over HTTP (POST /sandbox/tsa), as clients that share no
// code with it use it: @libpdf/core's HTTP TSA client renewing a seal's B-LTA evidence, and OpenSSL's `ts`.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpTimestampAuthority, PDF } from '@libpdf/core';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCms } from '../../src/evidence/cms.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { OID, parseCertificates } from '../../src/evidence/pki.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal, TSA_POLICY } from '../../packages/sandbox/src/seal.js';
import { docRecipe, run } from '../support/evidence.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';

let sandbox: TestSandbox;
let tsaUrl: string;
let caPem: string;

beforeAll(async () => {
  sandbox = await startTestSandbox();
  tsaUrl = `${sandbox.running.url}/sandbox/tsa`;
  // The trust anchor as any client gets it: over HTTP from the sandbox.
  caPem = await (await fetch(`${sandbox.running.url}/sandbox/ca.pem`)).text();
});
afterAll(() => sandbox?.close());

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest();

async function post(body: Uint8Array | string, type = 'application/timestamp-query') {
  const response = await fetch(tsaUrl, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: response.status, type: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

const FAILURE_BITS = ['badAlg', '', 'badRequest', '', '', 'badDataFormat'] as const;
const NAMED: Record<number, string> = { 15: 'unacceptedPolicy', 16: 'unacceptedExtension' };

/** A TimeStampResp's status, the failure bits it names, and its token's parts. */
function readResponse(bytes: Uint8Array) {
  const response = pkijs.TimeStampResp.fromBER(bytes);
  const failures: string[] = [];
  const bits = response.status.failInfo?.valueBlock.valueHexView ?? new Uint8Array();
  for (let i = 0; i < bits.length * 8; i++) {
    if (bits[i >> 3]! & (0x80 >> (i & 7))) failures.push(NAMED[i] ?? FAILURE_BITS[i] ?? `bit ${i}`);
  }
  const reason = response.status.statusStrings?.map((s) => s.valueBlock.value).join(' ') ?? '';
  if (!response.timeStampToken) return { status: response.status.status, failures, reason, token: null };
  const signedData = new pkijs.SignedData({ schema: response.timeStampToken.content });
  const info = pkijs.TSTInfo.fromBER(signedData.encapContentInfo.eContent!.getValue());
  return { status: response.status.status, failures, reason, token: { signedData, info } };
}

/** A TimeStampReq (DER) for a SHA-256 digest; `change` adjusts it before it is encoded. */
function request(digest: Uint8Array, change: (req: pkijs.TimeStampReq) => void = () => {}): Buffer {
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }),
      hashedMessage: new asn1js.OctetString({ valueHex: digest }),
    }),
    nonce: new asn1js.Integer({ valueHex: Buffer.from('00c0ffee0123456789', 'hex') }),
    certReq: true,
  });
  change(req);
  return Buffer.from(req.toSchema().toBER(false));
}

describe('the sandbox TSA (POST /sandbox/tsa)', () => {
  it("gives @libpdf/core's HTTP TSA client a token that our verification accepts, chained to the sandbox CA", async () => {
    const data = randomBytes(4096);
    const token = await new HttpTimestampAuthority(tsaUrl).timestamp(sha256(data), 'SHA-256');
    const contentInfo = pkijs.ContentInfo.fromBER(token);
    const signedData = new pkijs.SignedData({ schema: contentInfo.content });
    const info = pkijs.TSTInfo.fromBER(signedData.encapContentInfo.eContent!.getValue());
    expect(Buffer.from(info.messageImprint.hashedMessage.valueBlock.valueHexView)).toEqual(sha256(data));
    // DER throughout: the eContent is one primitive OCTET STRING, and re-encoding the token changes nothing.
    expect(signedData.encapContentInfo.eContent!.idBlock.isConstructed).toBe(false);
    expect(Buffer.from(contentInfo.toSchema().toBER(false))).toEqual(Buffer.from(token));

    const anchors = parseCertificates(caPem);
    const verified = await verifyCms(signedData, data, anchors, new Date());
    expect(verified).toMatchObject({ signatureValid: true, trusted: true });
    expect(verified.signer?.subject.typesAndValues.map((t) => t.value.valueBlock.value)).toContain('esign sandbox time-stamping authority');
    // Over other data it does not hold.
    expect((await verifyCms(signedData, randomBytes(16), anchors, new Date())).signatureValid).toBe(false);
  });

  it("renews a sealed PDF's B-LTA evidence with a document time-stamp from the TSA, which the archive's check accepts", async () => {
    const url = sandbox.running.url;
    // The sandbox's own identities (the test sandbox's pki/), sealing as it does at completion.
    const seal = await SandboxSeal.open(join(sandbox.dataDir, 'pki'));
    const sealed = await seal.seal(await samplePdf('Renewed'), 'Signed by every participant', new Date());
    const doc = await PDF.load(sealed);
    const { bytes } = await doc.addArchivalData({
      timestampAuthority: new HttpTimestampAuthority(`${url}/sandbox/tsa`),
      revocationProvider: { getCRL: async () => new Uint8Array(await (await fetch(`${url}/sandbox/ca.crl`)).arrayBuffer()) },
    });
    const renewed = Buffer.from(bytes);
    expect(renewed.subarray(0, sealed.length)).toEqual(sealed);
    const check = await checkPdfSignature(renewed, trustAnchorsOnly(parseCertificates(caPem)), new Date());
    expect(check.problems).toEqual([]);
    expect(check).toMatchObject({ level: 'B-LTA', indication: 'TOTAL_PASSED' });
    expect(check.archiveTimestamps).toHaveLength(2);
  });

  it('answers OpenSSL: `openssl ts -verify` finds the reply valid against the CA from /sandbox/ca.pem, nonce echoed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-tsa-'));
    await writeFile(join(dir, 'data.bin'), randomBytes(10_000));
    await writeFile(join(dir, 'ca.pem'), caPem);
    await run('openssl', ['ts', '-query', '-data', 'data.bin', '-sha256', '-cert', '-out', 'req.tsq'], { cwd: dir });
    const answer = await post(await readFile(join(dir, 'req.tsq')));
    expect(answer).toMatchObject({ status: 200, type: 'application/timestamp-reply' });
    await writeFile(join(dir, 'resp.tsr'), answer.bytes);

    const verify = await run('openssl', ['ts', '-verify', '-data', 'data.bin', '-in', 'resp.tsr', '-CAfile', 'ca.pem'], { cwd: dir });
    expect(verify.stdout).toContain('Verification: OK');
    // Against the query itself: OpenSSL also checks the imprint, the nonce and that the certificate it asked for is there.
    const byQuery = await run('openssl', ['ts', '-verify', '-queryfile', 'req.tsq', '-in', 'resp.tsr', '-CAfile', 'ca.pem'], { cwd: dir });
    expect(byQuery.stdout).toContain('Verification: OK');

    const query = (await run('openssl', ['ts', '-query', '-in', 'req.tsq', '-text'], { cwd: dir })).stdout;
    const reply = (await run('openssl', ['ts', '-reply', '-in', 'resp.tsr', '-text'], { cwd: dir })).stdout;
    const nonce = /Nonce: (\S+)/.exec(query)?.[1];
    expect(nonce).toMatch(/^0x[0-9A-F]+$/);
    expect(reply).toContain(`Nonce: ${nonce}`);
    expect(reply).toContain('Status: Granted.');
    expect(reply).toMatch(/Hash Algorithm: sha256/);
    expect(reply).toContain(`Policy OID: ${TSA_POLICY}`);

    // Another CA's client does not accept it.
    const other = (await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-tsa-other-')))).caCertificate;
    await writeFile(join(dir, 'other.pem'), other);
    const refused = await run('openssl', ['ts', '-verify', '-data', 'data.bin', '-in', 'resp.tsr', '-CAfile', 'other.pem'], {
      cwd: dir,
    }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` }));
    expect(refused.stdout).not.toContain('Verification: OK');
  });

  it("runs docs/evidence.md's OpenSSL and curl recipe as written, against this sandbox", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-tsa-recipe-'));
    await writeFile(join(dir, 'document.pdf'), await samplePdf('Stamped'));
    await writeFile(join(dir, 'ca.pem'), caPem);
    const lines = docRecipe(/openssl ts -query/, 'TSA').map((l) => l.replace('http://127.0.0.1:4010', sandbox.running.url));
    const { stdout } = await run('bash', ['-c', ['set -euo pipefail', ...lines].join('\n')], { cwd: dir });
    expect(stdout).toContain('Status: Granted.');
    expect(stdout.match(/^Verification: OK$/gm)).toHaveLength(2);
  });

  it('leaves the certificate out when the query does not ask for it, and the nonce when it has none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-tsa-nocert-'));
    await writeFile(join(dir, 'data.bin'), randomBytes(100));
    await writeFile(join(dir, 'ca.pem'), caPem);
    await run('openssl', ['ts', '-query', '-data', 'data.bin', '-sha256', '-no_nonce', '-out', 'req.tsq'], { cwd: dir });
    const answer = await post(await readFile(join(dir, 'req.tsq')));
    const { status, token } = readResponse(answer.bytes);
    expect(status).toBe(0);
    expect(token?.signedData.certificates).toBeUndefined();
    expect(token?.info.nonce).toBeUndefined();
    await writeFile(join(dir, 'resp.tsr'), answer.bytes);
    // The client has the TSA's certificate from elsewhere (here, the sandbox's pki/) and names it.
    const untrusted = join(sandbox.dataDir, 'pki', 'tsa.pem');
    const verify = await run(
      'openssl',
      ['ts', '-verify', '-queryfile', 'req.tsq', '-in', 'resp.tsr', '-CAfile', 'ca.pem', '-untrusted', untrusted],
      { cwd: dir },
    );
    expect(verify.stdout).toContain('Verification: OK');
  });

  it('rejects a SHA-1 query (badAlg) with a reply OpenSSL reads, not an HTTP error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-tsa-sha1-'));
    await writeFile(join(dir, 'data.bin'), randomBytes(100));
    await run('openssl', ['ts', '-query', '-data', 'data.bin', '-sha1', '-cert', '-out', 'req.tsq'], { cwd: dir });
    const answer = await post(await readFile(join(dir, 'req.tsq')));
    expect(answer).toMatchObject({ status: 200, type: 'application/timestamp-reply' });
    expect(readResponse(answer.bytes)).toMatchObject({ status: 2, failures: ['badAlg'], token: null });
    await writeFile(join(dir, 'resp.tsr'), answer.bytes);
    const reply = (await run('openssl', ['ts', '-reply', '-in', 'resp.tsr', '-text'], { cwd: dir })).stdout;
    expect(reply).toContain('Status: Rejected.');
    expect(reply).toContain('unrecognized or unsupported algorithm identifier');
  });

  it('rejects what is not a DER TimeStampReq with badDataFormat, never a 500', async () => {
    const valid = request(sha256(Buffer.from('x')));
    const bodies = [
      Buffer.from('not a time-stamp request'),
      Buffer.alloc(0),
      randomBytes(300),
      valid.subarray(0, valid.length - 5),
      Buffer.concat([valid, Buffer.from([0x05, 0x00])]),
      // A nonce INTEGER with a redundant leading zero: echoed as is, it would make the token BER.
      request(sha256(Buffer.from('x')), (r) => (r.nonce = new asn1js.Integer({ valueHex: Buffer.from('0001', 'hex') }))),
    ];
    for (const body of bodies) {
      const answer = await post(body);
      expect({ body: body.toString('hex'), status: answer.status, type: answer.type }).toEqual({
        body: body.toString('hex'),
        status: 200,
        type: 'application/timestamp-reply',
      });
      expect(readResponse(answer.bytes)).toMatchObject({ status: 2, failures: ['badDataFormat'], token: null });
    }
  });

  it('rejects a hash of the wrong length (badAlg), another policy (unacceptedPolicy), extensions and other versions', async () => {
    const digest = sha256(Buffer.from('policy'));
    const granted = readResponse((await post(request(digest))).bytes);
    expect(granted.status).toBe(0);
    expect(Buffer.from(granted.token!.info.nonce!.valueBlock.valueHexView).toString('hex')).toBe('00c0ffee0123456789');

    // Its own policy, asked for by name, is granted.
    expect(readResponse((await post(request(digest, (r) => (r.reqPolicy = TSA_POLICY)))).bytes).status).toBe(0);
    const cases: [string, Buffer][] = [
      ['badAlg', request(digest.subarray(0, 20))],
      ['unacceptedPolicy', request(digest, (r) => (r.reqPolicy = '1.2.3.4'))],
      [
        'unacceptedExtension',
        request(digest, (r) => (r.extensions = [new pkijs.Extension({ extnID: '1.2.3.4', extnValue: new asn1js.Null().toBER(false) })])),
      ],
      ['badRequest', request(digest, (r) => (r.version = 2))],
    ];
    for (const [failure, body] of cases) {
      const answer = readResponse((await post(body)).bytes);
      expect({ failure, status: answer.status, failures: answer.failures }).toEqual({ failure, status: 2, failures: [failure] });
      expect(answer.reason).not.toBe('');
    }
  });

  it('answers every mangled request with a TimeStampResp', async () => {
    const valid = request(sha256(Buffer.from('fuzz')));
    for (let i = 0; i < 60; i++) {
      const mangled = Buffer.from(valid);
      const at = (i * 7) % mangled.length;
      mangled.writeUInt8(mangled.readUInt8(at) ^ (1 << (i % 8)), at);
      const answer = await post(mangled);
      expect(answer.status).toBe(200);
      expect([0, 2]).toContain(readResponse(answer.bytes).status);
    }
  });

  it('refuses another content type with 415 problem+json', async () => {
    for (const [body, type] of [
      ['{}', 'application/json'],
      ['hello', 'text/plain'],
      [request(sha256(Buffer.from('x'))), 'application/octet-stream'],
    ] as const) {
      const answer = await post(body, type);
      expect({ type, status: answer.status }).toEqual({ type, status: 415 });
      expect(answer.type).toMatch(/^application\/problem\+json/);
      const problem = JSON.parse(answer.bytes.toString('utf8')) as { status: number; detail: string };
      expect(problem.status).toBe(415);
      expect(problem.detail).toContain('application/timestamp-query');
    }
  });

  it('refuses a body larger than any request (413) before reading it', async () => {
    const answer = await post(randomBytes(65 * 1024));
    expect(answer.status).toBe(413);
  });
});
