// The evidence a completed transaction carries, checked by tools that share
// no code with us (poppler's pdfsig, OpenSSL, Info-ZIP's unzip), and the
// archive's refusal of evidence that does not hold up.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyZip } from '../../src/archive/zip-verify.js';
import { AuditTrail } from '../../src/esign/evidence.js';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { sealPdf } from '../../packages/sandbox/src/evidence/pades-sign.js';
import { createCertificateAuthority, issueSigningCertificate, loadSigningIdentity, parseCertificates } from '../../src/evidence/pki.js';
import { TimestampAuthority } from '../../src/evidence/timestamp.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { retryArchiveUpdate, statusQuery, type EsignTransactionResult } from '../../src/definitions/transaction.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import {
  auditTrailRecipes,
  forgeCompletedZip,
  opensslTimestamp,
  opensslVerify,
  pdfsig,
  pyhanko,
  run,
  sha256,
  type ForgedDocument,
} from '../support/evidence.js';
import { pdfPageTexts, readZipEntries } from '../support/zip.js';
import { trustAnchorsOnly } from '../../src/evidence/trust.js';
import { validateWithDss } from '../support/dss.js';
import { validateWithPyhanko } from '../support/pyhanko.js';

let env: EsignTestEnv;
let caPem: string;
let completed: EsignTransactionResult;

beforeAll(async () => {
  env = await startEsignTestEnv();
  // The trust anchor as any client gets it: over HTTP from the sandbox.
  caPem = await (await fetch(`${env.sandbox.running.url}/sandbox/ca.pem`)).text();
  const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  completed = await handle.result();
});
afterAll(() => env?.close());

async function archivedEntries(): Promise<Map<string, Buffer>> {
  return readZipEntries(fileURLToPath(completed.archive!.uri));
}

describe('the evidence of a completed transaction', () => {
  it('seals every PDF (PAdES) so that pdfsig and OpenSSL, against the CA served by the sandbox, find it valid', async () => {
    expect(completed.status).toBe('completed');
    expect(caPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const entries = await archivedEntries();
    const pdfs = [...entries].filter(([name]) => name.endsWith('.pdf'));
    expect(pdfs.map(([n]) => n).sort()).toEqual(['Annex A.pdf', 'Employment contract.pdf', 'certificate-of-completion.pdf']);
    for (const [, pdf] of pdfs) {
      const report = await pdfsig(pdf);
      expect(report).toContain('Signature Type: ETSI.CAdES.detached');
      // pdfsig verifies the seal (signature 1); the document time-stamp after it is pyHanko's to judge.
      expect(report).toMatch(/Signature #1:[\s\S]*Signature Validation: Signature is Valid\./);
      expect(report).toContain('Signature Validation: Signature is Valid.');
      expect(report).toContain('Signer full Distinguished Name: CN=esign sandbox document seal,O=esign sandbox');
      expect(await opensslVerify(pdf, caPem)).toMatchObject({ ok: true });
    }
  });

  it('is TOTAL_PASSED at PAdES-BASELINE-LTA by EU DSS, and by pyHanko’s AdES validation, each under a strict policy, offline', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-judged-'));
    const files = await Promise.all(
      [...(await archivedEntries())]
        .filter(([name]) => name.endsWith('.pdf'))
        .map(async ([name, pdf]) => {
          const file = join(dir, name);
          await writeFile(file, pdf);
          return file;
        }),
    );
    // DSS's verdicts are read twice (a JVM run each time would be seconds of CPU for the same answer).
    const dss = await validateWithDss(files, caPem);
    for (const verdicts of [dss, await validateWithPyhanko(files, caPem)]) {
      expect(
        [...verdicts.values()].map((v) => ({ file: v.file, accepted: v.accepted, indication: v.indication, reasons: v.reasons })),
      ).toEqual(files.map((f) => ({ file: basename(f), accepted: true, indication: 'TOTAL_PASSED', reasons: [] })));
    }
    for (const v of dss.values()) expect(v.signatures.find((s) => s.kind !== 'timestamp')?.level).toBe('PAdES-BASELINE-LTA');
  });

  it('is found intact, trusted and extended only by LTA updates by pyHanko (validate and adesverify), with the sandbox CA as its only trust root', async () => {
    const pdfs = [...(await archivedEntries())].filter(([name]) => name.endsWith('.pdf'));
    for (const [name, pdf] of pdfs) {
      const { code, out } = await pyhanko('validate', pdf, caPem);
      expect({ name, code }).toEqual({ name, code: 0 });
      expect(out).toMatch(/:INTACT:TRUSTED,TIMESTAMP_TOKEN<INTACT:TRUSTED>,EXTENDED_WITH_LTA_UPDATES,ACCEPTABLE_MODIFICATIONS/);
      // AdES-style, with every certificate's revocation status read from the embedded OCSP responses and CRLs.
      const ades = await pyhanko('adesverify', pdf, caPem);
      expect({ name, code: ades.code }).toEqual({ name, code: 0 });
      expect(ades.out).toMatch(/:INTACT:TRUSTED,TIMESTAMP_TOKEN<INTACT:TRUSTED>,EXTENDED_WITH_LTA_UPDATES,ACCEPTABLE_MODIFICATIONS/);
    }
    // One byte changed: pyHanko refuses it too.
    const tampered = Buffer.from(pdfs[0]![1]);
    tampered.writeUInt8(tampered.readUInt8(400) ^ 0x01, 400);
    const refused = await pyhanko('validate', tampered, caPem);
    expect(refused.code).not.toBe(0);
    expect(refused.out).not.toMatch(/:INTACT:TRUSTED/);
  });

  it('seals its audit trail: pdfdetach finds it in the certificate, and the hash chain holds (docs/evidence.md, step 6)', async () => {
    const entries = await archivedEntries();
    const trail = AuditTrail.parse(JSON.parse(entries.get('audit-trail.json')!.toString('utf8')));
    expect(trail).toMatchObject({ format: 'esign-audit-trail/v2', chain: { algorithm: 'SHA-256/JCS' } });
    expect(completed.archive!.evidence!.auditTrail).toMatchObject({ head: trail.chain!.head, problems: [] });
    const recipes = await auditTrailRecipes(entries);
    expect(recipes, recipes.output).toMatchObject({ sealedCopy: true, chain: true });
    // One event changed: the copy no longer matches the sealed one, and the chain breaks at that event.
    const changed = { ...trail, events: trail.events.map((e, i) => (i === 1 ? { ...e, at: '2020-01-01T00:00:00.000Z' } : e)) };
    const tampered = new Map(entries).set('audit-trail.json', Buffer.from(JSON.stringify(changed, null, 2) + '\n'));
    const refused = await auditTrailRecipes(tampered);
    expect(refused).toMatchObject({ sealedCopy: false, chain: false });
    expect(refused.output).toContain('event 2 has been altered');
  });

  it("publishes its CA's CRL and answers OCSP for the seal's certificate, as OpenSSL checks them online", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-ocsp-'));
    await writeFile(join(dir, 'ca.pem'), caPem);
    await cp(join(env.sandbox.dataDir, 'pki', 'seal.pem'), join(dir, 'seal.pem'));
    const url = env.sandbox.running.url;
    await writeFile(join(dir, 'ca.crl'), Buffer.from(await (await fetch(`${url}/sandbox/ca.crl`)).arrayBuffer()));
    const crl = await run('openssl', ['crl', '-inform', 'DER', '-in', 'ca.crl', '-CAfile', 'ca.pem', '-noout', '-text'], { cwd: dir });
    expect(crl.stderr).toContain('verify OK');
    expect(crl.stdout).toContain('No Revoked Certificates');
    const ocsp = await run(
      'openssl',
      ['ocsp', '-issuer', 'ca.pem', '-cert', 'seal.pem', '-url', `${url}/sandbox/ocsp`, '-CAfile', 'ca.pem'],
      {
        cwd: dir,
      },
    );
    expect(ocsp.stdout).toContain('seal.pem: good');
    expect(ocsp.stderr).toContain('Response verify OK');
    // A certificate it did not issue is unknown to it.
    const other = (await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-ocsp-other-')))).caCertificate;
    await writeFile(join(dir, 'other.pem'), other);
    const unknown = await run(
      'openssl',
      ['ocsp', '-issuer', 'ca.pem', '-cert', 'other.pem', '-url', `${url}/sandbox/ocsp`, '-CAfile', 'ca.pem'],
      {
        cwd: dir,
      },
    );
    expect(unknown.stdout).toContain('other.pem: unknown');
  });

  it('is refused by pdfsig, OpenSSL and our check alike once one byte changes, or under another CA', async () => {
    const pdf = (await archivedEntries()).get('Employment contract.pdf')!;
    const tampered = Buffer.from(pdf);
    tampered.writeUInt8(tampered.readUInt8(400) ^ 0x01, 400);
    expect(await pdfsig(tampered)).not.toContain('Signature is Valid.');
    expect((await opensslVerify(tampered, caPem)).ok).toBe(false);
    const ours = await checkPdfSignature(tampered, trustAnchorsOnly(parseCertificates(caPem)), new Date());
    expect(ours.problems.join()).toMatch(/does not verify/);

    const otherCa = (await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-other-ca-')))).caCertificate;
    expect((await opensslVerify(pdf, otherCa)).ok).toBe(false);
    expect((await checkPdfSignature(pdf, trustAnchorsOnly(parseCertificates(otherCa)), new Date())).problems.join()).toMatch(
      /does not chain to a trust anchor/,
    );
  });

  it('carries an audit trail and a certificate of completion: every event, and the hash of each upload and each final PDF', async () => {
    const entries = await archivedEntries();
    const trail = AuditTrail.parse(JSON.parse(entries.get('audit-trail.json')!.toString('utf8')));
    const types = trail.events.map((e) => e.type);
    expect(types[0]).toBe('created');
    expect(types).toContain('sent');
    expect(types.filter((t) => t === 'signed')).toHaveLength(2);
    expect(types.filter((t) => t === 'tag_applied')).toHaveLength(3);
    expect(types.at(-1)).toBe('completed');
    expect(trail.events.find((e) => e.type === 'created')?.ip).toBe('127.0.0.1');
    const uploaded = await Promise.all(env.pdfs.map(async (p) => sha256(await readFile(p))));
    expect(trail.documents.map((d) => d.original.sha256)).toEqual(uploaded);
    expect(trail.documents.map((d) => d.final.sha256)).toEqual([
      sha256(entries.get('Employment contract.pdf')!),
      sha256(entries.get('Annex A.pdf')!),
    ]);
    const text = (await pdfPageTexts(entries.get('certificate-of-completion.pdf')!)).join('\n');
    expect(trail.timestampAuthority?.subject).toBe('CN=esign sandbox time-stamping authority, O=esign sandbox');
    for (const expected of [
      'Certificate of completion',
      'Ada Lovelace',
      'Alan Turing',
      uploaded[0]!,
      trail.documents[1]!.final.sha256,
      'time-stamped (RFC 3161) by CN=esign sandbox time-stamping authority',
    ])
      expect(text).toContain(expected);
  });

  it("time-stamps every seal (PAdES B-T): OpenSSL's RFC 3161 verifier accepts each token, and the manifest records its time", async () => {
    const entries = await archivedEntries();
    const evidence = completed.archive!.evidence!;
    const recorded = new Map(
      [...evidence.documents, ...(evidence.certificateOfCompletion ? [evidence.certificateOfCompletion] : [])].map((d) => [
        d.entry,
        d.signature.timestamp,
      ]),
    );
    const completedAt = Date.parse(AuditTrail.parse(JSON.parse(entries.get('audit-trail.json')!.toString('utf8'))).transaction.completedAt);
    for (const [name, pdf] of [...entries].filter(([n]) => n.endsWith('.pdf'))) {
      const stamp = await opensslTimestamp(pdf, caPem);
      expect(stamp, `${name}: ${stamp.output}`).toMatchObject({ ok: true });
      // The token's time is the one our check recorded, and it is when the sandbox completed (to the second).
      expect(recorded.get(name)).toMatchObject({
        time: stamp.time,
        authority: { subject: 'CN=esign sandbox time-stamping authority, O=esign sandbox' },
      });
      expect(Math.abs(Date.parse(stamp.time!) - completedAt)).toBeLessThan(10_000);
      // Held against another signature value, the same token fails.
      const other = await opensslTimestamp(pdf, caPem, 'printf x >> signature-value.bin');
      expect(other.ok).toBe(false);
      expect(other.output).toMatch(/message imprint mismatch/);
    }
    expect(
      (
        await opensslTimestamp(
          entries.get('Annex A.pdf')!,
          (await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-ts-other-')))).caCertificate,
        )
      ).ok,
    ).toBe(false);
  });

  it('refuses a time-stamp for another signature, by an authority outside the trust anchors, or by a certificate not for time-stamping', async () => {
    const ca = await createCertificateAuthority({ CN: 'test CA' });
    const anchors = parseCertificates(ca.certificate);
    const seal = await loadSigningIdentity(await issueSigningCertificate(ca, { CN: 'test seal' }), [ca.certificate]);
    const tsa = await loadSigningIdentity(await issueSigningCertificate(ca, { CN: 'test TSA' }, new Date(), 1, 'time-stamping'), []);
    const sealed = async (authority: TimestampAuthority) =>
      checkPdfSignature(
        await sealPdf(await samplePdf('Stamped'), seal, {
          reason: 'test',
          location: 'here',
          contactInfo: 'test',
          signingTime: new Date(),
          timestampAuthority: authority,
        }),
        trustAnchorsOnly(anchors),
        new Date(),
      );
    // A B-T seal: its time-stamp holds; it carries no revocation data (that takes B-LT), which is all that is missing.
    const good = await sealed(new TimestampAuthority(tsa, '2.25.1'));
    expect(good.problems).toEqual([
      expect.stringMatching(/^the seal: no revocation data establishes/),
      expect.stringMatching(/^the signature time-stamp: no revocation data establishes/),
    ]);
    expect(good.level).toBe('B-T');
    expect(good.timestamp?.authority.subject).toBe('CN=test TSA');

    class OtherDataTsa extends TimestampAuthority {
      override stamp(): Promise<Buffer> {
        return super.stamp(createHash('sha256').update('some other signature').digest());
      }
    }
    expect((await sealed(new OtherDataTsa(tsa, '2.25.1'))).problems.join()).toMatch(/time-stamp is for other data than this signature/);

    const otherCa = await createCertificateAuthority({ CN: 'other CA' });
    const outsider = await loadSigningIdentity(
      await issueSigningCertificate(otherCa, { CN: 'outside TSA' }, new Date(), 1, 'time-stamping'),
      [],
    );
    expect((await sealed(new TimestampAuthority(outsider, '2.25.1'))).problems.join()).toMatch(
      /time-stamping authority does not chain to a trust anchor/,
    );

    // A document-signing certificate may not speak for the time.
    expect((await sealed(new TimestampAuthority(seal, '2.25.1'))).problems.join()).toMatch(/is not timeStamping alone \(RFC 3161 2\.3\)/);
  });

  it('passes unzip -t, and a corrupted entry fails our CRC-32 check (and unzip)', async () => {
    const path = fileURLToPath(completed.archive!.uri);
    await run('unzip', ['-tq', path]);
    const corrupt = join(await mkdtemp(join(tmpdir(), 'esign-crc-')), 'corrupt.zip');
    const bytes = await readFile(path);
    // A byte inside the first entry's data (stored, so the ZIP stays readable): only the CRC can tell.
    const at = bytes.indexOf('%PDF-') + 200;
    bytes.writeUInt8(bytes.readUInt8(at) ^ 0x01, at);
    await writeFile(corrupt, bytes);
    await expect(verifyZip(corrupt)).rejects.toThrow(/fails its CRC-32 check/);
    await expect(run('unzip', ['-tq', corrupt])).rejects.toThrow();
  });
});

describe('the archive refuses evidence that does not hold up', () => {
  /** The sandbox's own seal: forged ZIPs under it differ from a real one only where a test says. */
  const sandboxSeal = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esign-seal-'));
    await cp(join(env.sandbox.dataDir, 'pki'), dir, { recursive: true });
    return SandboxSeal.open(dir);
  };
  const originals = () => Promise.all(env.pdfs.map((p) => readFile(p)));
  const titles = ['Employment contract', 'Annex A'];

  const cases: [string, (tx: { id: string; esignId: string; storagePaths: string[] }) => Promise<Buffer>, RegExp][] = [
    [
      'PDFs sealed under another CA',
      async (tx) => {
        const other = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-other-seal-')));
        const docs = (await originals()).map((original, i) => ({ title: titles[i]!, StoragePath: tx.storagePaths[i]!, original }));
        return forgeCompletedZip({ seal: other, transaction: tx, documents: docs });
      },
      /does not chain to a trust anchor/,
    ],
    [
      'an incremental update appended after sealing',
      async (tx) => {
        const docs: ForgedDocument[] = (await originals()).map((original, i) => ({
          title: titles[i]!,
          StoragePath: tx.storagePaths[i]!,
          original,
        }));
        docs[0]!.tamper = (sealed) => Buffer.concat([sealed, Buffer.from('\n9 0 obj\n(changed)\nendobj\n%%EOF\n')]);
        return forgeCompletedZip({ seal: await sandboxSeal(), transaction: tx, documents: docs });
      },
      /byte\(s\) were added after signing/,
    ],
    [
      'a sealed document that is not the one we uploaded',
      async (tx) => {
        const docs = (await originals()).map((original, i) => ({ title: titles[i]!, StoragePath: tx.storagePaths[i]!, original }));
        docs[1] = { ...docs[1]!, original: Buffer.from(await samplePdf('Forged annex')) };
        return forgeCompletedZip({ seal: await sandboxSeal(), transaction: tx, documents: docs });
      },
      /document 2 \("Annex A"\): the provider signed an original with SHA-256 [0-9a-f]{64}, but we uploaded [0-9a-f]{64}/,
    ],
    [
      'an unsealed document in an entry without .pdf (the ZIP that once passed as not checked)',
      async (tx) => {
        const docs: ForgedDocument[] = (await originals()).map((original, i) => ({
          title: titles[i]!,
          StoragePath: tx.storagePaths[i]!,
          original,
        }));
        Object.assign(docs[0]!, { entry: 'Employment contract', sealed: false });
        return forgeCompletedZip({ seal: await sandboxSeal(), transaction: tx, documents: docs });
      },
      /"Employment contract": the PDF is not signed/,
    ],
    [
      'no certificate of completion',
      async (tx) => {
        const docs = (await originals()).map((original, i) => ({ title: titles[i]!, StoragePath: tx.storagePaths[i]!, original }));
        return forgeCompletedZip({ seal: await sandboxSeal(), transaction: tx, documents: docs, certificate: false });
      },
      /no certificate-of-completion\.pdf, which the evidence policy requires/,
    ],
  ];

  it.each(cases)(
    'refuses %s with ArchiveInvalid, archiving nothing, and holds the transaction for an operator',
    async (_name, forge, reason) => {
      const before = await readdir(env.archiveDir);
      const { handle } = await env.start(env.input({ reconcileInterval: '1 second' }));
      let transactionId: string | null = null;
      await expect.poll(async () => (transactionId = (await handle.query(statusQuery)).transactionId), { timeout: 20_000 }).not.toBeNull();
      const record = (await env.sandbox.control.inspect(transactionId!))!.record;
      const zip = await forge({ id: record.id!, esignId: record.esignId!, storagePaths: record.documents.map((d) => d.StoragePath) });
      await env.sandbox.control.completeWithZip(transactionId!, zip);

      // The provider completed it: not an end, but a refused archive that waits for an operator (retryArchive).
      const held = await waitForPhase(handle, 'archive_invalid');
      expect(held.archiveProblem).toMatch(/^ArchiveInvalid: /);
      expect(held.archiveProblem).toMatch(reason);
      expect(await readdir(env.archiveDir)).toEqual(before);
      expect(existsSync(join(env.archiveDir, transactionId!))).toBe(false);
      // The same ZIP is refused again, with the same reason; the workflow keeps waiting.
      const again = await handle.executeUpdate(retryArchiveUpdate).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(WorkflowUpdateFailedError);
      const failure = (again as WorkflowUpdateFailedError).cause as { type?: string; message: string } | undefined;
      expect(failure?.type).toBe('ArchiveInvalid');
      expect(failure?.message).toMatch(reason);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.terminate('test done');
    },
  );
});
