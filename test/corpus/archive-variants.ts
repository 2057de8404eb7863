// The corpus's ZIP and audit-trail classes: completed ZIPs, genuine and forged, judged by the archive's own whole
// check only (EU DSS and pyHanko judge PDFs, not ZIPs: the report says n/a for them). Each is judged as the archive
// activity judges a download (activities/archive.ts `archiveCompletedDocuments`): `evidenceCheck` under `require`,
// its inspector fed to a StreamingZipVerifier chunk by chunk, falling back to `verifyZip` on the file when the
// stream cannot follow the layout, then `conclude`. A refusal is the message the activity would fail with.
//
// The ZIPs are sealed by a sandbox seal of the corpus's own (SandboxSeal.open, as a provider seals), so their trust
// is that seal's: its CA for every role, its sealing key pinned (providerTrust). The PDF corpus's trust (the corpus
// PKI, which the test hands every judge) is not the one these seals answer to.
//
// - zip: the container. Hostile layouts (test/support/zip.ts buildZip, as test/evidence/zip-forgeries.test.ts forges them)
//   made of the genuine ZIP's own entries, so that nothing but the layout is wrong; and entries no evidence
//   accounts for (test/evidence/evidence-policy.test.ts's forgeries).
// - trail: the audit trail and the certificate of completion, each forgery isolating one check where it can: a
//   trail the provider "sealed" as it is (re-sealed by the genuine seal, certificate of completion rendered from
//   it), so only the binding or the chain tells; or changed after sealing, so only the sealed copy tells
//   (test/evidence/evidence-trust.test.ts, test/evidence/evidence-policy.test.ts).
import { createReadStream } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EvidenceRejected, evidenceCheck, type EvidencePolicy, type ExpectedCompletion } from '../../src/archive/evidence.js';
import { StreamingZipVerifier } from '../../src/archive/zip-stream.js';
import { DEFAULT_ZIP_LIMITS, UnsafeZipError, verifyZip, type VerifiedEntry } from '../../src/archive/zip-verify.js';
import { chainEvents } from '../../src/esign/audit-chain.js';
import { AUDIT_TRAIL_ENTRY, COMPLETION_CERTIFICATE_ENTRY, type AuditTrail } from '../../src/esign/evidence.js';
import { providerTrust, type TrustPolicy } from '../../src/evidence/trust.js';
import { renderCompletionCertificate } from '../../packages/sandbox/src/certificate.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { forgeCompletedZip, sha256, type ForgedDocument } from '../support/evidence.js';
import { buildZip, readZipEntries, type RawZipEntry, type RawZipOptions } from '../support/zip.js';
import type { CorpusContext, VariantSpec } from './variants.js';

/** The transaction every ZIP is judged as the record of. */
const TX = { id: 'tx-corpus', esignId: 'es-corpus' };
const DOCUMENT = { title: 'Contract', StoragePath: 'uploads/contract.pdf', entry: 'Contract.pdf' };
/** The participants the workflow created (for the variants that pass them). */
const WORKFLOW_PARTICIPANTS = ['p-signer-1', 'p-signer-2'];
/** Chunks of a download as the activity sees them (the pass must not depend on where they break). */
const CHUNK = 16 * 1024 - 3;

interface Archive {
  seal: SandboxSeal;
  trust: TrustPolicy;
  /** The PDF we uploaded: the corpus's base document. */
  original: Buffer;
  /** The genuine completed ZIP (forgeCompletedZip), and its entries in order. */
  genuine: Buffer;
  entries: { doc: Buffer; certificate: Buffer; trail: Buffer };
}

/** Which of the activity's two readings judged the ZIP: the download pass, or verifyZip after it fell back. */
export type ArchivePath = 'download pass' | 'verifyZip';

/**
 * What the archive activity does with a downloaded ZIP under `policy`: `problems` is empty when it archives it,
 * else the message it fails with (naming the reading that refused it).
 */
export async function archiveVerdict(
  file: string,
  completion: ExpectedCompletion,
  policy: EvidencePolicy,
  at: Date,
): Promise<{ problems: string[]; path: ArchivePath }> {
  let check = evidenceCheck(completion, policy, () => at);
  const streaming = new StreamingZipVerifier(DEFAULT_ZIP_LIMITS, check.inspector);
  let path: ArchivePath = 'download pass';
  let why = '';
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: CHUNK })) await streaming.update(chunk as Buffer);
    const verdict = await streaming.finish(file);
    let files: VerifiedEntry[];
    if ('entries' in verdict) files = verdict.entries;
    else {
      // A layout the stream cannot follow: read the file again, from its central directory (a fresh check).
      path = 'verifyZip';
      why = ` (the download pass fell back: ${verdict.fallback})`;
      check = evidenceCheck(completion, policy, () => at);
      files = await verifyZip(file, DEFAULT_ZIP_LIMITS, check.inspector);
    }
    check.conclude(files);
    return { problems: [], path };
  } catch (err) {
    if (err instanceof UnsafeZipError || err instanceof EvidenceRejected) {
      const by = path === 'verifyZip' ? `verifyZip${why}` : 'the download pass';
      return { problems: [`completed ZIP rejected by ${by}: ${err.message}`], path };
    }
    // The activity would rethrow this as a retryable failure: a bug of ours, reported as a refusal with its stack.
    return { problems: [`the archive check threw (${path}): ${(err as Error).stack ?? String(err)}`], path };
  }
}

/**
 * The ZIP and audit-trail variants. Their seal is opened once per call, on the first build (into a temporary
 * directory of its own, left for the OS as the other evidence tests leave theirs).
 */
export function archiveSpecs(): VariantSpec[] {
  let archive: Promise<Archive> | undefined;
  const ready = (ctx: CorpusContext) => (archive ??= open(ctx));

  const completion =
    (over: Partial<ExpectedCompletion> = {}) =>
    async (): Promise<ExpectedCompletion> => ({
      transactionId: TX.id,
      esignId: TX.esignId,
      documents: [{ title: DOCUMENT.title, StoragePath: DOCUMENT.StoragePath, sha256: sha256((await archive!).original) }],
      ...over,
    });
  type Spec = Omit<VariantSpec, 'kind' | 'judge' | 'class'> & {
    expected?: () => Promise<ExpectedCompletion>;
    /** The reading an accepted variant must be judged by (a refusal names its reading in its message). */
    path?: ArchivePath;
  };
  const specs: VariantSpec[] = [];
  const add = (cls: 'zip' | 'trail', { expected = completion(), path: expectedPath, ...spec }: Spec) =>
    specs.push({
      ...spec,
      class: cls,
      kind: 'zip',
      // The trust the test hands every judge is the PDF corpus's; these ZIPs answer to their own seal's.
      judge: async (file, _pdfCorpusTrust, at) => {
        const { trust } = await archive!;
        const policy: EvidencePolicy = { signatures: 'require', trust, requireCompletionCertificate: true };
        const { problems, path } = await archiveVerdict(file, await expected(), policy, at);
        if (expectedPath && path !== expectedPath && problems.length === 0) {
          return [`accepted by ${path}, not by ${expectedPath} as this variant means`];
        }
        return problems;
      },
    });
  const zip = (spec: Spec) => add('zip', spec);
  const trail = (spec: Spec) => add('trail', spec);

  type ForgeOptions = Partial<Parameters<typeof forgeCompletedZip>[0]>;
  const forge = async (ctx: CorpusContext, over: ForgeOptions = {}, docs?: (d: ForgedDocument) => void) => {
    const { seal, original } = await ready(ctx);
    const d: ForgedDocument = { ...DOCUMENT, original };
    docs?.(d);
    return forgeCompletedZip({ seal, transaction: TX, documents: [d], ...over });
  };
  /** The genuine ZIP's entries laid out by `buildZip`, as `layout` changes them. */
  const relaid = async (ctx: CorpusContext, layout: (e: Archive['entries'], forged: Buffer) => RawZipEntry[], options?: RawZipOptions) => {
    const { entries, original } = await ready(ctx);
    return buildZip(layout(entries, original), options);
  };
  const plain = (e: Archive['entries']): RawZipEntry[] => [
    { name: DOCUMENT.entry, data: e.doc },
    { name: COMPLETION_CERTIFICATE_ENTRY, data: e.certificate },
    { name: AUDIT_TRAIL_ENTRY, data: e.trail },
  ];
  /**
   * The genuine documents with another audit trail, which the genuine seal seals as it is: the certificate of
   * completion rendered from it and embedding it, as a provider (or its stolen key) would issue it.
   */
  const resealed = async (ctx: CorpusContext, change: (t: AuditTrail) => AuditTrail) => {
    const { seal, entries } = await ready(ctx);
    const trail = change(JSON.parse(entries.trail.toString('utf8')) as AuditTrail);
    const bytes = Buffer.from(JSON.stringify(trail));
    const certificate = await seal.seal(await renderCompletionCertificate(trail, bytes), 'Certificate', new Date());
    return buildZip([
      { name: DOCUMENT.entry, data: entries.doc },
      { name: COMPLETION_CERTIFICATE_ENTRY, data: certificate },
      { name: AUDIT_TRAIL_ENTRY, data: bytes },
    ]);
  };

  // ----- zip ----------------------------------------------------------------------------------------------------
  zip({
    id: 'zip-genuine',
    description: 'a genuine completed ZIP (yazl, as the sandbox writes it): sealed document, certificate of completion, audit trail',
    expect: 'accept',
    path: 'download pass',
    build: async (ctx) => (await ready(ctx)).genuine,
  });
  zip({
    id: 'zip-genuine-relaid',
    description:
      "the genuine ZIP's entries laid out by the corpus's raw ZIP writer with nothing changed (what every hostile layout departs from)",
    expect: 'accept',
    path: 'download pass',
    build: (ctx) => relaid(ctx, plain),
  });
  zip({
    id: 'zip-genuine-fallback',
    description: 'the genuine entries, the document deflated with a data descriptor: the download pass falls back to verifyZip',
    expect: 'accept',
    path: 'verifyZip',
    build: (ctx) => relaid(ctx, (e) => plain(e).map((x, i) => (i === 0 ? { ...x, compress: true, descriptor: true } : x))),
  });
  zip({
    id: 'zip-hidden-entry',
    description:
      'an unsealed Contract.pdf after the sealed one, hidden from the central directory (a sequential extractor writes it over the sealed one)',
    expect: 'refuse',
    reason: /hidden from the central directory|duplicate entry name/,
    build: (ctx) =>
      relaid(ctx, (e, forged) => {
        const [doc, ...rest] = plain(e);
        return [doc!, { name: DOCUMENT.entry, data: forged, hidden: true }, ...rest];
      }),
  });
  zip({
    id: 'zip-hidden-entry-fallback',
    description: 'the same hidden entry after a deflated document with a data descriptor: found by verifyZip, the fallback path',
    expect: 'refuse',
    reason: /by verifyZip .*entry "Contract\.pdf" \(at byte \d+\) is hidden from the central directory/,
    build: (ctx) =>
      relaid(ctx, (e, forged) => {
        const [doc, ...rest] = plain(e);
        return [{ ...doc!, compress: true, descriptor: true }, { name: DOCUMENT.entry, data: forged, hidden: true }, ...rest];
      }),
  });
  zip({
    id: 'zip-bytes-before-first-entry',
    description: 'a shell stub before the first local header (the directory offsets count it)',
    expect: 'refuse',
    reason: /\d+ bytes before the first entry/,
    build: (ctx) =>
      relaid(ctx, (e) => {
        const [doc, ...rest] = plain(e);
        return [{ ...doc!, before: Buffer.from('#!/bin/sh\nexec unzip "$0"\n') }, ...rest];
      }),
  });
  zip({
    id: 'zip-bytes-between-entries',
    description: 'seven bytes between the document and the certificate of completion',
    expect: 'refuse',
    reason: /bytes between entries/,
    build: (ctx) =>
      relaid(ctx, (e) => {
        const [doc, certificate, rest] = plain(e);
        return [doc!, { ...certificate!, before: Buffer.from('\n%%EOF\n') }, rest!];
      }),
  });
  zip({
    id: 'zip-local-header-disagrees',
    description: "the document's local header names Forged.pdf, its central directory entry Contract.pdf",
    expect: 'refuse',
    reason: /does not match the entry in the file: name "Contract\.pdf" there, "Forged\.pdf" in its local header/,
    build: (ctx) =>
      relaid(ctx, (e) => {
        const [doc, ...rest] = plain(e);
        return [{ ...doc!, local: { name: 'Forged.pdf' } }, ...rest];
      }),
  });
  zip({
    id: 'zip-entry-listed-twice',
    description: 'the sealed document listed a second time in the central directory, as Appendix.pdf, at the same offset',
    expect: 'refuse',
    reason: /an entry listed twice|duplicate entry name/,
    build: (ctx) =>
      relaid(ctx, (e) => {
        const [doc, ...rest] = plain(e);
        return [{ ...doc!, listedAgainAs: 'Appendix.pdf' }, ...rest];
      }),
  });
  zip({
    id: 'zip-trailing-comment',
    description: 'the genuine entries with a comment after the end of central directory record',
    expect: 'refuse',
    reason: /comment of 17 bytes/,
    build: (ctx) => relaid(ctx, plain, { comment: Buffer.from('signed and sealed') }),
  });
  zip({
    id: 'zip-case-folded-names',
    description: 'an unsealed contract.PDF beside the sealed Contract.pdf: one file once case-folded',
    expect: 'refuse',
    reason: /duplicate entry name/,
    build: (ctx) =>
      relaid(ctx, (e, forged) => {
        const [doc, ...rest] = plain(e);
        return [doc!, { name: 'contract.PDF', data: forged }, ...rest];
      }),
  });
  zip({
    id: 'zip-extra-entry',
    description: 'a genuine ZIP with one more PDF, sealed by the genuine seal, that no document or evidence accounts for',
    expect: 'refuse',
    reason: /the ZIP holds "Side letter\.pdf", which is neither one of our documents nor evidence/,
    build: async (ctx) => {
      const { seal } = await ready(ctx);
      const side = await seal.seal(await samplePdf('Side letter'), 'Signed by every participant', new Date());
      return forge(ctx, { extra: [{ name: 'Side letter.pdf', data: side }] });
    },
  });
  zip({
    id: 'zip-unsealed-document',
    description: 'the document entry is the unsealed original (the trail and certificate list it as it is)',
    expect: 'refuse',
    reason: /"Contract\.pdf": the PDF is not signed/,
    build: (ctx) => forge(ctx, {}, (d) => (d.sealed = false)),
  });

  // ----- trail --------------------------------------------------------------------------------------------------
  const participant = (id: string) => ({ id, name: `Signer ${id}`, email: `${id}@example.com`, authentication: ['email'] });
  trail({
    id: 'trail-genuine',
    description: "the genuine ZIP's trail, checked against the workflow's transaction (its participants: none, as it lists)",
    expect: 'accept',
    expected: completion({ participantIds: [] }),
    build: async (ctx) => (await ready(ctx)).genuine,
  });
  trail({
    id: 'trail-genuine-participants',
    description: "a trail listing the workflow's two participants, sealed as it is (what trail-foreign-participants departs from)",
    expect: 'accept',
    expected: completion({ participantIds: WORKFLOW_PARTICIPANTS }),
    build: (ctx) => resealed(ctx, (t) => ({ ...t, participants: WORKFLOW_PARTICIPANTS.map(participant) })),
  });
  trail({
    id: 'trail-other-transaction',
    description: "another transaction's genuine ZIP, of the same upload (same storage path and hash)",
    expect: 'refuse',
    reason: /audit-trail\.json is the record of transaction tx-other, not of tx-corpus/,
    build: (ctx) => forge(ctx, { transaction: { id: 'tx-other', esignId: 'es-other' } }),
  });
  trail({
    id: 'trail-other-esignid',
    description: 'a genuine ZIP of this transaction id under another esignId',
    expect: 'refuse',
    reason: /record of esignId es-other, not of es-corpus/,
    build: (ctx) => forge(ctx, { transaction: { id: TX.id, esignId: 'es-other' } }),
  });
  trail({
    id: 'trail-foreign-participants',
    description: 'a trail, sealed as it is, listing two participants that are not the two the workflow created',
    expect: 'refuse',
    reason: /lists 2 participant\(s\) that are not this transaction's 2/,
    expected: completion({ participantIds: WORKFLOW_PARTICIPANTS }),
    build: (ctx) => resealed(ctx, (t) => ({ ...t, participants: ['p-stranger-1', 'p-stranger-2'].map(participant) })),
  });
  trail({
    id: 'trail-declined',
    description: 'a hash-chained trail that ends in a decline, sealed as it is',
    expect: 'refuse',
    reason: /records a decline/,
    build: (ctx) =>
      resealed(ctx, (t) => {
        const chain = chainEvents(t.transaction.id, [{ at: t.transaction.completedAt, type: 'declined', participantId: 'p-signer-1' }]);
        return { ...t, events: chain.events, chain: { ...t.chain!, head: chain.head } };
      }),
  });
  trail({
    id: 'trail-seal-names-other-certificate',
    description: "a trail whose `seal` names the sandbox TSA's certificate, not the one that sealed, sealed as it is",
    expect: 'refuse',
    reason: /names the seal [0-9a-f]{64}, but 2 PDF\(s\) are sealed by another certificate/,
    build: async (ctx) => {
      const { seal } = await ready(ctx);
      const { subject, issuer, sha256: hash } = seal.timestampAuthority;
      return resealed(ctx, (t) => ({ ...t, seal: { subject, issuer, sha256: hash } }));
    },
  });
  trail({
    id: 'trail-changed-after-sealing',
    description:
      "the ZIP's trail changed after the certificate of completion sealed the true one (an event's address, the chain computed again)",
    expect: 'refuse',
    reason: /audit-trail\.json is not the copy sealed in certificate-of-completion\.pdf/,
    build: (ctx) =>
      forge(ctx, {
        alterTrail: (t) => {
          const chain = chainEvents(
            t.transaction.id,
            t.events.map(({ seq: _s, prev: _p, hash: _h, ...e }) => ({ ...e, ip: '10.6.6.6' })),
          );
          return { ...t, events: chain.events, chain: { ...t.chain!, head: chain.head } };
        },
      }),
  });
  trail({
    id: 'trail-broken-chain',
    description: 'a trail whose event was changed without its hash, sealed as it is (only the chain tells)',
    expect: 'refuse',
    reason: /audit-trail\.json: audit event 1 has been altered/,
    build: (ctx) => resealed(ctx, (t) => ({ ...t, events: t.events.map((e) => ({ ...e, ip: '10.6.6.6' })) })),
  });
  trail({
    id: 'trail-wrong-original-hash',
    description: "a trail listing another PDF's hash as the original signed, sealed as it is",
    expect: 'refuse',
    reason: /the provider signed an original with SHA-256 [0-9a-f]{64}, but we uploaded [0-9a-f]{64}/,
    build: async (ctx) => {
      const other = sha256(await samplePdf('Another contract'));
      return resealed(ctx, (t) => ({ ...t, documents: t.documents.map((d) => ({ ...d, original: { ...d.original, sha256: other } })) }));
    },
  });
  trail({
    id: 'trail-missing',
    description: 'a genuine ZIP without its audit trail (the certificate of completion still embeds it)',
    expect: 'refuse',
    reason: /the ZIP has no audit-trail\.json/,
    build: (ctx) => forge(ctx, { trail: false }),
  });
  trail({
    id: 'trail-no-certificate',
    description: 'a genuine ZIP without its certificate of completion (nothing seals the trail)',
    expect: 'refuse',
    reason: /the ZIP has no certificate-of-completion\.pdf/,
    build: (ctx) => forge(ctx, { certificate: false }),
  });

  return specs;
}

async function open(ctx: CorpusContext): Promise<Archive> {
  const seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-corpus-seal-')));
  const original = ctx.base;
  const genuine = await forgeCompletedZip({ seal, transaction: TX, documents: [{ ...DOCUMENT, original }] });
  const file = join(await mkdtemp(join(tmpdir(), 'esign-corpus-genuine-')), 'completed.zip');
  await writeFile(file, genuine);
  const read = await readZipEntries(file);
  const entry = (name: string) => {
    const data = read.get(name);
    if (!data) throw new Error(`the genuine ZIP has no ${name}`);
    return data;
  };
  return {
    seal,
    trust: providerTrust(seal),
    original,
    genuine,
    entries: { doc: entry(DOCUMENT.entry), certificate: entry(COMPLETION_CERTIFICATE_ENTRY), trail: entry(AUDIT_TRAIL_ENTRY) },
  };
}
