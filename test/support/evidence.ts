// Builds completed ZIPs the way a provider would (sealed PDFs, audit trail,
// certificate of completion), with whichever part a hostile test wants wrong.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PDFDocument, PDFName } from 'pdf-lib';
import { chainEvents } from '../../src/esign/audit-chain.js';
import {
  AUDIT_TRAIL_ENTRY,
  AUDIT_TRAIL_FORMAT,
  CHAIN_ALGORITHM,
  COMPLETION_CERTIFICATE_ENTRY,
  type AuditTrail,
} from '../../src/esign/evidence.js';
import { renderCompletionCertificate } from '../../packages/sandbox/src/certificate.js';
import type { SandboxSeal } from '../../packages/sandbox/src/seal.js';
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
  /** The entry's name in the ZIP and the audit trail (default: the title and `.pdf`). */
  entry?: string;
  /** false: the final PDF is the original, with no seal. */
  sealed?: false;
  /** false: listed in the audit trail, left out of the ZIP. */
  inZip?: false;
  /** The entry the audit trail names for it, when it lies (default: `entry`). */
  listedAs?: string;
}

/** A completed ZIP sealed by `seal`: documents, then the certificate of completion (unless left out) and the audit trail. */
export async function forgeCompletedZip(options: {
  seal: SandboxSeal;
  transaction: { id: string; esignId: string };
  documents: ForgedDocument[];
  /** false: no certificate of completion; 'unsealed': one without a seal; 'without-trail': sealed, the trail not embedded. */
  certificate?: boolean | 'unsealed' | 'without-trail';
  /** false: no audit trail. */
  trail?: false;
  /** Changes the ZIP's audit trail after the certificate embedded (and sealed) the true one. */
  alterTrail?: (trail: AuditTrail) => AuditTrail;
  /** Entries added after the evidence. */
  extra?: ZipEntrySpec[];
}): Promise<Buffer> {
  const at = new Date();
  const entries: ZipEntrySpec[] = [];
  const documents: AuditTrail['documents'] = [];
  for (const [index, d] of options.documents.entries()) {
    let sealed = d.sealed === false ? d.original : await options.seal.seal(d.original, 'Signed by every participant', at);
    if (d.tamper) sealed = d.tamper(sealed);
    const entry = d.entry ?? `${d.title}.pdf`;
    if (d.inZip !== false) entries.push({ name: entry, data: sealed });
    documents.push({
      index,
      title: d.title,
      entry: d.listedAs ?? entry,
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
    ...(() => {
      const chain = chainEvents(options.transaction.id, [{ at: at.toISOString(), type: 'completed' }]);
      return { events: chain.events, chain: { algorithm: CHAIN_ALGORITHM, head: chain.head } };
    })(),
    seal: { subject: options.seal.certificate.subject, issuer: options.seal.certificate.issuer, sha256: options.seal.certificate.sha256 },
  };
  const trailBytes = Buffer.from(JSON.stringify(options.alterTrail ? options.alterTrail(trail) : trail));
  if (options.certificate !== false) {
    let rendered = await renderCompletionCertificate(trail, Buffer.from(JSON.stringify(trail)));
    if (options.certificate === 'without-trail') {
      const doc = await PDFDocument.load(rendered);
      doc.catalog.delete(PDFName.of('Names'));
      rendered = await doc.save({ useObjectStreams: false });
    }
    entries.push({
      name: COMPLETION_CERTIFICATE_ENTRY,
      data: options.certificate === 'unsealed' ? Buffer.from(rendered) : await options.seal.seal(rendered, 'Certificate', at),
    });
  }
  if (options.trail !== false) entries.push({ name: AUDIT_TRAIL_ENTRY, data: trailBytes });
  entries.push(...(options.extra ?? []));
  const dir = await mkdtemp(join(tmpdir(), 'esign-forged-'));
  return (await import('node:fs/promises')).readFile(await writeZip(join(dir, 'completed.zip'), entries));
}

let pyhankoCli: Promise<string> | undefined;

/**
 * pyHanko (PyPI; installed into .tools/ by scripts/ensure-pyhanko.sh), a PAdES validator that shares no code
 * with us, run on `pdf` with `caPem` as its only trust root. `validate` is its plain check (signature, chain,
 * time-stamp, modifications); `adesverify` is its AdES-style one, which also wants revocation data for every
 * certificate it trusts. Resolves with the exit code and what it printed; never rejects on a verdict.
 */
export async function pyhanko(
  mode: 'validate' | 'adesverify',
  pdf: Buffer,
  caPem: string,
  extra: string[] = [],
): Promise<{ code: number; out: string }> {
  // A failed install is tried again by the next caller (a test process runs many files), not remembered.
  pyhankoCli ??= run('bash', [fileURLToPath(new URL('../../scripts/ensure-pyhanko.sh', import.meta.url))], { timeout: 300_000 }).then(
    ({ stdout }) => stdout.trim(),
    (err: unknown) => {
      pyhankoCli = undefined;
      throw err;
    },
  );
  const cli = await pyhankoCli;
  const dir = await mkdtemp(join(tmpdir(), 'esign-pyhanko-'));
  const file = join(dir, 'document.pdf');
  const ca = join(dir, 'ca.pem');
  await writeFile(file, pdf);
  await writeFile(ca, caPem);
  return run(cli, ['sign', mode, '--trust', ca, '--trust-replace', ...extra, file], { timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof err.code === 'number' ? err.code : -1,
      out: `${err.stdout ?? ''}${err.stderr ?? ''}`,
    }),
  );
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
 * Verifies a PDF's seal (its first signature) with OpenSSL against `caPem`, with no code
 * of ours: the shell recipe of docs/evidence.md ("How an auditor checks an
 * archive"), run as written, cuts out the signed bytes and the CMS, checks
 * that it covers a whole revision, and `openssl cms -verify` checks signature and chain.
 */
export async function opensslVerify(pdf: Buffer, caPem: string): Promise<{ ok: boolean; output: string }> {
  const { ok, stdout, output } = await auditorRecipe(pdf, caPem, SEAL_RECIPE);
  return { ok: ok && stdout.includes('covers the sealed revision'), output };
}

/**
 * docs/evidence.md's two OpenSSL recipes, the seal's then the time-stamp's: `ok` when OpenSSL's
 * RFC 3161 verifier accepts the signature's time-stamp, with the time it vouches for.
 * `tamper` may change the extracted signature value before the time-stamp is checked against it.
 */
export async function opensslTimestamp(
  pdf: Buffer,
  caPem: string,
  tamper?: string,
): Promise<{ ok: boolean; time: string | null; output: string }> {
  // The tamper goes right after the line that writes the signature value.
  const at = TIMESTAMP_RECIPE.findIndex((l) => l.includes('> signature-value.bin')) + 1;
  const lines = [...SEAL_RECIPE, ...TIMESTAMP_RECIPE.slice(0, at), ...(tamper ? [tamper] : []), ...TIMESTAMP_RECIPE.slice(at)];
  const { ok, stdout, output } = await auditorRecipe(pdf, caPem, lines);
  const time = /Time stamp: (.+)/.exec(stdout)?.[1] ?? null;
  return { ok: ok && stdout.includes('Verification: OK'), time: time && new Date(`${time.replace(' GMT', '')} UTC`).toISOString(), output };
}

async function auditorRecipe(pdf: Buffer, caPem: string, lines: string[]): Promise<{ ok: boolean; stdout: string; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-openssl-'));
  await writeFile(join(dir, 'document.pdf'), pdf);
  await writeFile(join(dir, 'ca.pem'), caPem);
  const recipe = ['set -euo pipefail', "f='document.pdf'", ...lines].join('\n');
  try {
    const { stdout, stderr } = await run('bash', ['-c', recipe], { cwd: dir });
    return { ok: true, stdout, output: stdout + stderr };
  } catch (err) {
    return { ok: false, stdout: '', output: String((err as { stderr?: string }).stderr ?? err) };
  }
}

/** A recipe of docs/evidence.md, read from the doc so that what auditors are told is what runs here. */
export function docRecipe(start: RegExp, name: string): string[] {
  const doc = readFileSync(new URL('../../docs/evidence.md', import.meta.url), 'utf8');
  const block = new RegExp(`\`\`\`sh\\n\\s*(${start.source}[\\s\\S]*?)\`\`\``).exec(doc);
  if (!block) throw new Error(`docs/evidence.md has no ${name} recipe`);
  return block[1]!
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}
/** A recipe of docs/evidence.md in another language's fenced block, as written. */
function docBlock(language: string, start: RegExp, name: string): string {
  const doc = readFileSync(new URL('../../docs/evidence.md', import.meta.url), 'utf8');
  const block = new RegExp(`\`\`\`${language}\\n((?:\\s*)${start.source}[\\s\\S]*?)\`\`\``).exec(doc);
  if (!block) throw new Error(`docs/evidence.md has no ${name} recipe`);
  const lines = block[1]!.split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => /^ */.exec(l)![0].length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

/**
 * docs/evidence.md's step 6, as an auditor runs it in a directory `out/` holding the ZIP's entries: poppler's
 * pdfdetach takes the sealed copy of the audit trail out of the certificate and `cmp` holds it to the entry, then
 * the doc's Python checks the hash chain. Resolves with what each said.
 */
export async function auditTrailRecipes(entries: Map<string, Buffer>): Promise<{ sealedCopy: boolean; chain: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-trail-'));
  await mkdir(join(dir, 'out'));
  for (const [name, data] of entries) await writeFile(join(dir, 'out', name), data);
  await writeFile(join(dir, 'chain.py'), docBlock('python', /import hashlib/, 'audit trail chain'));
  const attempt = (file: string, args: string[]) =>
    run(file, args, { cwd: dir }).then(
      ({ stdout }) => ({ ok: true, out: stdout }),
      (err: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
  const sealed = await attempt('bash', ['-c', ['set -euo pipefail', ...docRecipe(/pdfdetach/, 'sealed audit trail')].join('\n')]);
  const chain = await attempt('python3', ['chain.py', 'out/audit-trail.json']);
  return {
    sealedCopy: sealed.ok && sealed.out.includes('the audit trail is the sealed copy'),
    chain: chain.ok && chain.out.includes('audit trail chain OK'),
    output: sealed.out + chain.out,
  };
}

/** The seal's lines after `f=…` (the caller sets `f`). */
const SEAL_RECIPE = docRecipe(/f='[^\n]*'\n/, 'OpenSSL seal').slice(1);
const TIMESTAMP_RECIPE = docRecipe(/openssl asn1parse/, 'OpenSSL time-stamp');
