// Scenario "archive": completed ZIPs of growing size served by the sandbox;
// the archive activity (download, hash, verify, commit) against a raw undici
// stream of the same URL to a file, in the same run. Throughput and this
// process's peak RSS growth for each size (memory must stay flat).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { ZipFile } from 'yazl';
import { createArchiveActivities, type ArchiveInput } from '../activities/archive.js';
import { LocalArchiveStore } from '../src/archive/store.js';
import { EsignClient } from '../src/esign/client.js';
import { samplePdf } from '../src/sandbox/pdf.js';
import { writeHashed } from '../src/util/streams.js';
import type { ArchiveResult } from '../workflows/definitions.js';
import { pendingTransaction } from './stack.js';
import { launchSandbox } from '../src/tools/sandbox-process.js';
import { activityEnvironment, fmt, markdownTable, mib, record, rssSampler } from './lib.js';

const DEFAULT_SIZES = [10 * 2 ** 20, 256 * 2 ** 20, 2 ** 30];

/** A ZIP holding one stored "PDF" of `size` bytes, written as a stream. */
async function bigZip(path: string, size: number): Promise<void> {
  const header = Buffer.from('%PDF-1.7\n');
  const chunk = Buffer.alloc(1 << 20, 0x20);
  const body = Readable.from(
    (function* () {
      yield header;
      let left = size - header.length;
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
        left -= n;
      }
    })(),
  );
  const zip = new ZipFile();
  zip.addReadStream(body, 'Agreement.pdf', { compress: false, size });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
}

export async function archiveStreaming(command: string): Promise<void> {
  const sizes = process.env.BENCH_ARCHIVE_SIZES
    ? process.env.BENCH_ARCHIVE_SIZES.split(',').map((s) => Number(s) * 2 ** 20)
    : DEFAULT_SIZES;
  const work = await mkdtemp(join(tmpdir(), 'bench-archive-'));
  const sandbox = await launchSandbox(join(work, 'sandbox'));
  const client = new EsignClient({ baseUrl: sandbox.url, token: sandbox.token, bodyTimeoutMs: 120_000 });
  const store = new LocalArchiveStore(join(work, 'archive'));
  const activities = createArchiveActivities({
    client,
    archive: store,
    zipLimits: { maxEntries: 10, maxTotalUncompressed: 8 * 2 ** 30, maxRatio: 200 },
  });
  const archive = (input: ArchiveInput) => activities.archiveCompletedDocuments(input);
  const rows: Record<string, string | number>[] = [];
  const rssGrowth: number[] = [];
  try {
    const pdf = join(work, 'small.pdf');
    await writeFile(pdf, await samplePdf('Agreement'));
    for (const size of sizes) {
      const created = await pendingTransaction(client, pdf, `bench-${size}`);
      const zipPath = join(work, 'source.zip');
      await bigZip(zipPath, size);
      await sandbox.control.completeWithZip(created.transactionId, createReadStream(zipPath));
      await rm(zipPath);

      // Baseline: a raw undici stream of the same URL to a file.
      global.gc?.();
      const rawBefore = process.memoryUsage.rss();
      const rawRss = rssSampler();
      let t0 = performance.now();
      const res = await request(`${sandbox.url}/transactions/${created.transactionId}/documents?type=completed`, {
        headers: { authorization: `Bearer ${sandbox.token}` },
      });
      const raw = await writeHashed(res.body, join(work, 'raw.zip'));
      const rawSeconds = (performance.now() - t0) / 1000;
      const rawPeak = rawRss.stop() - rawBefore;
      await rm(join(work, 'raw.zip'));

      // The archive activity: download, hash, verify every entry, commit atomically.
      global.gc?.();
      const before = process.memoryUsage.rss();
      const rss = rssSampler();
      t0 = performance.now();
      const result = await activityEnvironment().run<[ArchiveInput], ArchiveResult, typeof archive>(archive, {
        referenceId: `bench-${size}`,
        transactionId: created.transactionId,
        esignId: created.esignId,
        documents: [{ title: 'Agreement', StoragePath: created.storagePath }],
      });
      const seconds = (performance.now() - t0) / 1000;
      const absolutePeak = rss.stop();
      const peak = absolutePeak - before;
      if (result.sha256 !== raw.sha256) throw new Error('archive and raw download differ');
      await rm(join(work, 'archive'), { recursive: true, force: true });
      rssGrowth.push(absolutePeak);
      rows.push({
        'ZIP size (MiB)': fmt(mib(size), 0),
        'raw stream (MiB/s)': fmt(mib(raw.bytes) / rawSeconds),
        'archive activity (MiB/s)': fmt(mib(result.bytes) / seconds),
        'archive / raw': fmt(rawSeconds / seconds, 2),
        'raw peak RSS growth (MiB)': fmt(mib(rawPeak)),
        'archive peak RSS growth (MiB)': fmt(mib(peak)),
        'process peak RSS (MiB)': fmt(mib(absolutePeak)),
      });
      process.stdout.write(`  ${fmt(mib(size), 0)} MiB done\n`);
    }
  } finally {
    await client.close();
    await sandbox.stop();
    await rm(work, { recursive: true, force: true });
  }
  const growth = mib((rssGrowth.at(-1) ?? 0) - (rssGrowth[0] ?? 0));
  await record('archive streaming', command, markdownTable(rows), [
    `Process peak RSS while archiving the largest ZIP minus while archiving the smallest: ${fmt(growth)} MiB (target: under 32 MiB).`,
    'The archive activity reads the file a second time to verify every entry (yauzl) before committing; the raw baseline only writes it.',
    "The sandbox serves the ZIPs from its own process, so the RSS figures are the consumer's alone.",
  ]);
}
