/**
 * `esign erase <referenceId>`: erases a referenceId's personal data from Temporal's histories by destroying its
 * workflows' data keys (docs/records.md, "Erasure"); `esign keys init|rewrap`: the key store's life (docs/codec.md).
 */
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { S3ArchiveStore, s3Client } from '../archive/s3-store.js';
import { LocalArchiveStore, type ArchiveStore } from '../archive/store.js';
import type { DataKeys } from '../codec/data-keys.js';
import { keyStoreSpecFromEnv, loadKeyStore } from '../codec/key-store-config.js';
import { KeyStoreExists } from '../codec/key-store.js';
import { listLegalHolds } from '../client/records.js';
import { eraseReference, ErasureRefused } from '../records/erase.js';
import { CliError, Exit, type CliContext, type CliKit } from './context.js';
import { fields, table } from './output.js';

const NO_STORE =
  'no key store: set ESIGN_KEY_STORE (sqlite:<path> or s3://<bucket>/<prefix>) with the codec keys; without one, payloads are under the master keys only and cannot be erased (docs/codec.md)';

const keysOf = (ctx: CliContext): DataKeys => {
  if (!ctx.dataKeys) throw new CliError(NO_STORE, Exit.usage);
  return ctx.dataKeys;
};

/** The archive the workers write to, to say what it keeps: S3 when a bucket is set, else the local directory. */
function archiveStore(ctx: CliContext, env: NodeJS.ProcessEnv = process.env): ArchiveStore {
  if (env.ESIGN_ARCHIVE_S3_BUCKET)
    return new S3ArchiveStore({
      client: s3Client({ region: env.ESIGN_ARCHIVE_S3_REGION ?? 'us-east-1', endpoint: env.ESIGN_ARCHIVE_S3_ENDPOINT }),
      bucket: env.ESIGN_ARCHIVE_S3_BUCKET,
      prefix: env.ESIGN_ARCHIVE_S3_PREFIX ?? '',
    });
  return new LocalArchiveStore(env.ESIGN_ARCHIVE_DIR ?? join(ctx.dataDir, 'archive'));
}

export function registerErasureCommands(program: Command, kit: CliKit): void {
  program
    .command('erase <referenceId>')
    .description(
      "erase a referenceId's personal data from Temporal's histories (its data keys destroyed); refused while a hold stands or it runs",
    )
    .requiredOption('--reason <text>', 'why (an erasure request, its reference): printed in the report')
    .option('--by <who>', 'who asks (default: cli:<your login>)')
    .option('--close-event-log', 'end its event log now if only that runs (it stays 30 days to redeliver)')
    .action(async (referenceId: string, o: { reason: string; by?: string; closeEventLog?: boolean }) => {
      const by = o.by ?? `cli:${userInfo().username}`;
      const report = await kit.withContext(async (ctx) => {
        try {
          const erased = await eraseReference(
            { client: ctx.client, dataKeys: keysOf(ctx), holds: () => listLegalHolds(ctx.client), archives: archiveStore(ctx) },
            referenceId,
            by,
            { closeEventLog: o.closeEventLog === true },
          );
          return { ...erased, reason: o.reason };
        } catch (err) {
          if (err instanceof ErasureRefused) throw new CliError(`erasure refused: ${err.message}`, Exit.failed);
          throw err;
        }
      });
      kit.print(report, () =>
        [
          fields({ referenceId: report.referenceId, erasedAt: report.erasedAt, by: report.by, reason: report.reason }),
          report.keys.length === 0
            ? 'no data keys to destroy (none was made for it, or it was erased before)'
            : `destroyed ${report.keys.length} data key(s); these histories can no longer be read:\n${table(report.workflows, ['workflowId', 'runId', 'status', 'closedAt'])}`,
          ...(report.startedDuringErasure.length > 0
            ? [`started while it was being erased, and ended (they could not read their input): ${report.startedDuringErasure.join(', ')}`]
            : []),
          report.archives.length === 0
            ? 'no archive'
            : `the archive keeps:\n${table(
                report.archives.map((a) => ({ ...a, kept: a.kept ? 'yes' : 'no', retainedUntil: a.retainedUntil ?? '' })),
                ['transactionId', 'kept', 'retainedUntil', 'why'],
              )}`,
          "closed histories stay in Temporal until the namespace's retention removes them, unreadable.",
        ].join('\n\n'),
      );
    });

  const keys = program.command('keys').description('the key store of data keys (docs/codec.md, "Data keys and erasure")');
  keys
    .command('init')
    .description('create the key store ESIGN_KEY_STORE names; refused if one is there (a lost store is restored, never replaced)')
    .option('--if-absent', "print the store's identity when one is there, rather than refuse (a deployment's first start)")
    .action(async (o: { ifAbsent?: boolean }) => {
      const spec = keyStoreSpecFromEnv();
      if (!spec) throw new CliError(NO_STORE, Exit.usage);
      const store = await loadKeyStore(spec);
      try {
        const identity = await store.init().catch(async (err: unknown) => {
          if (o.ifAbsent && err instanceof KeyStoreExists) return store.open();
          throw new CliError(`${(err as Error).message}`, Exit.failed);
        });
        kit.print({ location: store.location, ...identity }, () => fields({ created: store.location, ...identity }));
      } finally {
        await store.close();
      }
    });
  keys
    .command('rewrap')
    .description('wrap every live data key under the first codec key, so that older codec keys can be dropped (histories untouched)')
    .action(async () => {
      const counted = await kit.withContext(async (ctx) => keysOf(ctx).rewrapAll());
      kit.print(counted, () => fields(counted));
    });
}
