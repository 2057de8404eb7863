// Scenario "evidence": what verifying the evidence costs the archive
// activity. Completed ZIPs of sealed PDFs (1, 10 and 25 MiB: the default
// document limit) are archived twice in the same run, once with signature
// verification off (the baseline: CRC-32, SHA-256, commit) and once with
// `require` (each PDF's CMS signature, whole-file coverage, chain to the
// trust anchor, the signature's time-stamp). Time and this process's peak
// RSS growth, median of 3.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createArchiveActivities, type ArchiveInput } from '../activities/archive.js';
import type { EvidencePolicy } from '../src/archive/evidence.js';
import { LocalArchiveStore } from '../src/archive/store.js';
import { EsignClient } from '../src/esign/client.js';
import { checkPdfSignature } from '../src/evidence/pades-verify.js';
import { sealPdf } from '../packages/sandbox/src/evidence/pades-sign.js';
import { createCertificateAuthority, issueSigningCertificate, loadSigningIdentity, parseCertificates } from '../src/evidence/pki.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { SandboxSeal } from '../packages/sandbox/src/seal.js';
import { launchSandbox } from '../tools/support/sandbox-process.js';
import type { ArchiveResult } from '../src/definitions/transaction.js';
import { bulkyPdf } from '../test/support/bulky-pdf.js';
import { pendingTransaction } from './stack.js';
import { forgeCompletedZip, sha256 } from '../test/support/evidence.js';
import { readZipEntries } from '../test/support/zip.js';
import { activityEnvironment, fmt, markdownTable, medianOf, mib, record, rssSampler } from './lib.js';
import { WARMUP } from './setup.js';
import { trustAnchorsOnly, providerTrust } from '../src/evidence/trust.js';

const SIZES_MIB = process.env.BENCH_EVIDENCE_SIZES ? process.env.BENCH_EVIDENCE_SIZES.split(',').map(Number) : [1, 10, 25];
const RUNS = Number(process.env.BENCH_EVIDENCE_RUNS ?? 3);
/** Seal checks timed for the one-check figures (each after BENCH_WARMUP untimed ones; the bench smoke times one). */
const CHECKS = Number(process.env.BENCH_EVIDENCE_CHECKS ?? 50);

async function sealedPdf(seal: SandboxSeal, bytes: number): Promise<Buffer> {
  return seal.seal(await bulkyPdf(bytes), 'benchmark', new Date());
}

async function writeTemp(dir: string, zip: Buffer): Promise<string> {
  const path = join(dir, 'forged.zip');
  await writeFile(path, zip);
  return path;
}

export async function evidenceVerification(command: string): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'bench-evidence-'));
  const sandbox = await launchSandbox(join(work, 'sandbox'));
  const client = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token, bodyTimeoutMs: 120_000 });
  const seal = await SandboxSeal.open(join(work, 'seal'));
  const policies: Record<string, EvidencePolicy> = {
    off: { signatures: 'off', trust: trustAnchorsOnly([]), requireCompletionCertificate: false },
    require: { signatures: 'require', trust: providerTrust(seal), requireCompletionCertificate: false },
  };
  const rows: Record<string, string | number>[] = [];
  let oneCheck: string;
  try {
    // One seal check alone, on a small sealed PDF (the size of a certificate of completion): what pkijs costs per document.
    const sample = await sealedPdf(seal, 0);
    const anchors = policies.require!.trust;
    const checkMs = async (pdf: Buffer, trusted: typeof anchors) => {
      const times: number[] = [];
      for (let i = 0; i < WARMUP + CHECKS; i++) {
        const t0 = performance.now();
        await checkPdfSignature(pdf, trusted, new Date());
        if (i >= WARMUP) times.push(performance.now() - t0);
      }
      return medianOf(times).median;
    };
    // The same seal without a time-stamp (B-B), under a CA of its own: what the time-stamp adds to a check.
    const bbCa = await createCertificateAuthority({ CN: 'benchmark CA' });
    const bbSeal = await loadSigningIdentity(await issueSigningCertificate(bbCa, { CN: 'benchmark seal' }), [bbCa.certificate]);
    const bbSample = await sealPdf(await samplePdf('Agreement'), bbSeal, {
      reason: 'benchmark',
      location: 'benchmark',
      contactInfo: 'benchmark',
      signingTime: new Date(),
    });
    const [chained, alone, bb] = [
      await checkMs(sample, anchors),
      await checkMs(sample, trustAnchorsOnly([])),
      await checkMs(bbSample, trustAnchorsOnly(parseCertificates(bbCa.certificate))),
    ];
    const share = (part: number) => fmt((100 * part) / chained, 0);
    oneCheck = `One seal check of a ${fmt(sample.length / 1024, 0)} KiB sealed PDF, alone (median of ${CHECKS}): ${fmt(chained, 1)} ms for the PAdES B-LTA seal (signature, its time-stamp, the document time-stamp and the /DSS's OCSP response and CRLs, each chained to the trust anchor); ${fmt(alone, 1)} ms without a trust anchor (${share(chained - alone)} % is the chains); ${fmt(bb, 1)} ms for a B-B seal of the same kind (${share(chained - bb)} % is the time-stamp).`;
    const small = join(work, 'small.pdf');
    await writeFile(small, await samplePdf('Agreement'));
    for (const size of SIZES_MIB) {
      const original = await bulkyPdf(size * 2 ** 20);
      let sealedBytes = 0;
      const timings: Record<string, { seconds: number[]; rss: number[] }> = {
        off: { seconds: [], rss: [] },
        require: { seconds: [], rss: [] },
      };
      for (let run = 0; run < RUNS; run++) {
        const created = await pendingTransaction(client, small, `bench-evidence-${size}-${run}`);
        // A complete ZIP, as `require` wants it (the document, the sealed certificate with the trail, the trail),
        // sealed at B-LTA before the clock starts.
        const zip = await forgeCompletedZip({
          seal,
          transaction: { id: created.transactionId, esignId: created.esignId },
          documents: [{ title: 'Agreement', StoragePath: created.storagePath, original }],
        });
        sealedBytes = (await readZipEntries(await writeTemp(work, zip))).get('Agreement.pdf')!.length;
        await sandbox.control.completeWithZip(created.transactionId, zip);
        // Alternate the order so neither policy always runs on a warmer cache.
        for (const name of run % 2 === 0 ? ['off', 'require'] : ['require', 'off']) {
          const store = new LocalArchiveStore(join(work, `archive-${name}`));
          const activities = createArchiveActivities({ client, archive: store, evidence: policies[name]! });
          const archive = (input: ArchiveInput) => activities.archiveCompletedDocuments(input);
          global.gc?.();
          const before = process.memoryUsage.rss();
          const rss = rssSampler();
          const t0 = performance.now();
          const result = await activityEnvironment().run<[ArchiveInput], ArchiveResult, typeof archive>(archive, {
            referenceId: `bench-evidence-${size}-${run}`,
            transactionId: created.transactionId,
            esignId: created.esignId,
            documents: [{ title: 'Agreement', StoragePath: created.storagePath, sha256: sha256(original) }],
          });
          timings[name]!.seconds.push((performance.now() - t0) / 1000);
          timings[name]!.rss.push(rss.stop() - before);
          if (name === 'require' && result.evidence?.documents[0]?.signature.result !== 'valid') throw new Error('the seal did not verify');
          await rm(join(work, `archive-${name}`), { recursive: true, force: true });
        }
      }
      const median = (xs: number[]) => medianOf(xs).median;
      const off = median(timings.off!.seconds);
      const on = median(timings.require!.seconds);
      rows.push({
        'sealed PDF (MiB)': fmt(mib(sealedBytes), 1),
        'verification off (ms)': fmt(off * 1000, 0),
        'verification require (ms)': fmt(on * 1000, 0),
        'require / off': fmt(on / off, 2),
        'off peak RSS growth (MiB)': fmt(mib(median(timings.off!.rss))),
        'require peak RSS growth (MiB)': fmt(mib(median(timings.require!.rss))),
      });
      process.stdout.write(`  ${size} MiB done\n`);
    }
  } finally {
    await client.close();
    await sandbox.stop();
    await rm(work, { recursive: true, force: true });
  }
  await record('evidence verification', command, markdownTable(rows), [
    oneCheck,
    'Both columns download, hash (SHA-256 and CRC-32) and commit the same ZIP from the sandbox; `require` also verifies the PAdES B-LTA seal (CMS signature, the revisions after it, chain to the trust anchor, the RFC 3161 time-stamp of the signature, the document time-stamp and the validation data) and the certificate of completion with its sealed audit trail.',
    "Seals are checked in the download pass (src/evidence/pdf-stream.ts): one SHA-256 gives the entry's hash and every signed span's digest, with no copy of the signed bytes. A document up to 32 MiB is also held whole for the check; a larger one keeps its first 1 MiB and last 8 MiB only, whatever its size.",
  ]);
}
