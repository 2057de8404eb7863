// The worker's ZIP limits (ESIGN_ZIP_MAX_*) bound what it downloads, not only what it reads: a provider sending a
// body no ZIP within them could be is cut off, and the refusal is final (ArchiveInvalid), not a download again.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArchiveActivities } from '../../activities/archive.js';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { maxZipBytes } from '../../src/archive/zip-verify.js';
import type { EsignClient } from '../../src/esign/client.js';
import { FailureType } from '../../src/failures.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';

/** A local header for a stored entry that says it holds `size` bytes, then zeros up to `total`: no ZIP, a long body. */
function hostileZipBody(size: number, total: number, pulled: { bytes: number }): Readable {
  const name = Buffer.from('a.pdf');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(0, 6); // flags
  header.writeUInt16LE(0, 8); // stored
  header.writeUInt32LE(0, 14); // crc
  header.writeUInt32LE(size, 18);
  header.writeUInt32LE(size, 22);
  header.writeUInt16LE(name.length, 26);
  const chunk = Buffer.alloc(1024 * 1024);
  let sent = 0;
  return new Readable({
    read() {
      if (sent === 0) {
        sent += 30 + name.length;
        pulled.bytes = sent;
        this.push(Buffer.concat([header, name]));
        return;
      }
      if (sent >= total) return void this.push(null);
      sent += chunk.length;
      pulled.bytes = sent;
      this.push(chunk);
    },
  });
}

describe('ZIP limits bound what the worker downloads, not only what it reads', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'attack-zip-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stops the download once the first local header is already over ESIGN_ZIP_MAX_UNCOMPRESSED_BYTES', async () => {
    const limit = 1024 * 1024; // 1 MiB
    const body = 64 * 1024 * 1024; // what a hostile provider keeps sending (think: 500 GB)
    const pulled = { bytes: 0 };
    const client = {
      downloadCompletedDocuments: async () => ({
        body: hostileZipBody(64 * 1024 * 1024, body, pulled),
        contentLength: undefined,
        contentType: 'application/zip',
      }),
    } as unknown as EsignClient;
    const activities = createArchiveActivities({
      client,
      archive: new LocalArchiveStore(join(dir, 'archive')),
      zipLimits: { maxEntries: 10, maxTotalUncompressed: limit, maxRatio: 200 },
    });
    const failure = await new MockActivityEnvironment()
      .run(() =>
        activities.archiveCompletedDocuments({
          referenceId: 'r',
          transactionId: randomUUID(),
          esignId: randomUUID(),
          documents: [],
        }),
      )
      .catch((e: unknown) => e as Error);
    // Over its limits is final: refused for an operator, not downloaded again.
    expect(failure).toMatchObject({ type: FailureType.ArchiveInvalid, nonRetryable: true });
    expect((failure as Error).message).toContain(`uncompressed size over ${limit} bytes`);
    // The header alone says 64 MiB > 1 MiB: nothing past a few chunks is pulled (and written to the archive's disk).
    expect(pulled.bytes).toBeLessThan(8 * limit);
  }, 60_000);

  it('stops a download longer than any ZIP its limits allow, whatever its headers say', async () => {
    const limits = { maxEntries: 1, maxTotalUncompressed: 1024 * 1024, maxRatio: 200 };
    const pulled = { bytes: 0 };
    // One entry within the limits, then bytes without end where the next header should be.
    const client = {
      downloadCompletedDocuments: async () => ({
        body: hostileZipBody(1024 * 1024, 64 * 1024 * 1024, pulled),
        contentType: 'application/zip',
      }),
    } as unknown as EsignClient;
    const activities = createArchiveActivities({ client, archive: new LocalArchiveStore(join(dir, 'archive-2')), zipLimits: limits });
    const failure = await new MockActivityEnvironment()
      .run(() =>
        activities.archiveCompletedDocuments({ referenceId: 'r', transactionId: randomUUID(), esignId: randomUUID(), documents: [] }),
      )
      .catch((e: unknown) => e as Error);
    expect(failure).toMatchObject({ type: FailureType.ArchiveInvalid, nonRetryable: true });
    expect((failure as Error).message).toContain(`over ${maxZipBytes(limits)} bytes, more than its limits allow`);
    expect(pulled.bytes).toBeLessThan(maxZipBytes(limits) + 2 * 1024 * 1024);
  }, 60_000);

  it('refuses at start-up an ESIGN_ZIP_MAX_RATIO below 1, which refuses every ZIP (even stored entries have ratio 1)', () => {
    const base = { ESIGN_PROVIDER_TOKEN: 'token', ESIGN_SIGNATURE_VERIFICATION: 'off' };
    for (const ratio of ['0.5', '0.0001', '1e-300'])
      expect(() => workerConfigFromEnv({ ...base, ESIGN_ZIP_MAX_RATIO: ratio }), ratio).toThrow(/ESIGN_ZIP_MAX_RATIO/);
  });
});
