// Builds completed ZIPs the way a provider would (sealed PDFs, audit trail,
// certificate of completion), with whichever part a hostile test wants wrong.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AUDIT_TRAIL_ENTRY, AUDIT_TRAIL_FORMAT, COMPLETION_CERTIFICATE_ENTRY, type AuditTrail } from '../../src/esign/evidence.js';
import { renderCompletionCertificate } from '../../src/sandbox/certificate.js';
import type { SandboxSeal } from '../../src/sandbox/seal.js';
import { writeZip, type ZipEntrySpec } from './zip.js';

export const run = promisify(execFile);
export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export interface ForgedDocument {
  title: string;
  StoragePath: string;
  /** The PDF the provider claims it was given. */
  original: Buffer;
  /** Changes the sealed PDF (after sealing, so the seal no longer covers it). */
  tamper?: (sealed: Buffer) => Buffer;
}

/** A completed ZIP sealed by `seal`: documents, then the certificate of completion (unless left out) and the audit trail. */
export async function forgeCompletedZip(options: {
  seal: SandboxSeal;
  transaction: { id: string; esignId: string };
  documents: ForgedDocument[];
  certificate?: boolean;
}): Promise<Buffer> {
  const at = new Date();
  const entries: ZipEntrySpec[] = [];
  const documents: AuditTrail['documents'] = [];
  for (const [index, d] of options.documents.entries()) {
    let sealed = await options.seal.seal(d.original, 'Signed by every participant', at);
    if (d.tamper) sealed = d.tamper(sealed);
    const entry = `${d.title}.pdf`;
    entries.push({ name: entry, data: sealed });
    documents.push({
      index,
      title: d.title,
      entry,
      original: { storagePath: d.StoragePath, bytes: d.original.length, sha256: sha256(d.original) },
      final: { bytes: sealed.length, sha256: sha256(sealed) },
    });
  }
  const trail: AuditTrail = {
    format: AUDIT_TRAIL_FORMAT,
    transaction: {
      id: options.transaction.id,
      esignId: options.transaction.esignId,
      createdAt: at.toISOString(),
      completedAt: at.toISOString(),
    },
    participants: [],
    documents,
    events: [{ seq: 1, at: at.toISOString(), type: 'completed' }],
    seal: { subject: options.seal.certificate.subject, issuer: options.seal.certificate.issuer, sha256: options.seal.certificate.sha256 },
  };
  if (options.certificate !== false) {
    entries.push({
      name: COMPLETION_CERTIFICATE_ENTRY,
      data: await options.seal.seal(await renderCompletionCertificate(trail), 'Certificate', at),
    });
  }
  entries.push({ name: AUDIT_TRAIL_ENTRY, data: Buffer.from(JSON.stringify(trail)) });
  const dir = await mkdtemp(join(tmpdir(), 'esign-forged-'));
  return (await import('node:fs/promises')).readFile(await writeZip(join(dir, 'completed.zip'), entries));
}

/** `pdfsig -nocert` (poppler): the signature's own verdict, without certificate-store lookups. */
export async function pdfsig(pdf: Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-pdfsig-'));
  const file = join(dir, 'document.pdf');
  await writeFile(file, pdf);
  const { stdout } = await run('pdfsig', ['-nocert', file]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return stdout;
}

/**
 * Verifies a PDF's last signature with OpenSSL against `caPem`, with no code
 * of ours: the /ByteRange is read with a regular expression, the signed bytes
 * and the CMS are cut out, and `openssl cms -verify` checks signature and chain.
 */
export async function opensslVerify(pdf: Buffer, caPem: string): Promise<{ ok: boolean; output: string }> {
  const ranges = [...pdf.toString('latin1').matchAll(/\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g)];
  const [a, b, c, d] = ranges.at(-1)!.slice(1, 5).map(Number) as [number, number, number, number];
  const dir = await mkdtemp(join(tmpdir(), 'esign-openssl-'));
  await writeFile(join(dir, 'signed.bin'), Buffer.concat([pdf.subarray(a, a + b), pdf.subarray(c, c + d)]));
  await writeFile(join(dir, 'signature.der'), Buffer.from(pdf.subarray(b + 1, c - 1).toString('latin1'), 'hex'));
  await writeFile(join(dir, 'ca.pem'), caPem);
  const args = ['cms', '-verify', '-binary', '-inform', 'DER', '-in', join(dir, 'signature.der'), '-content', join(dir, 'signed.bin')];
  args.push('-CAfile', join(dir, 'ca.pem'), '-purpose', 'any', '-out', '/dev/null');
  try {
    const { stderr } = await run('openssl', args);
    return { ok: true, output: stderr };
  } catch (err) {
    return { ok: false, output: String((err as { stderr?: string }).stderr ?? err) };
  }
}
