import { randomUUID } from 'node:crypto';
import { actInSandbox, NotTheSandbox, SandboxActRefused } from '../client/sandbox.js';
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { WorkflowNotFoundError, type WorkflowExecutionInfo } from '@temporalio/client';
import { s3Client } from '../archive/s3-store.js';
import { ArchiveDownloadRefused, downloadArchive } from '../client/archive.js';
import type { S3ObjectReader } from '../storage/s3-http.js';
import {
  AmbiguousArchiveRetry,
  cancelEsignTransaction,
  getEsignStatus,
  getEsignTransaction,
  InvalidTransactionInput,
  issueSigningUrl,
  LateCompletionEnded,
  retryEsignArchive,
  startEsignTransaction,
} from '../client/transactions.js';
import { describeIssues } from '../util/zod-issues.js';
import { hashFile } from '../util/streams.js';
import { WORKFLOW_TYPE, type EsignTransactionResult, type EsignTransactionStatus } from '../definitions/transaction.js';
import { EsignTransactionInput, type DocumentInput, type ParticipantInput } from '../transaction/input.js';
import { CliError, Exit, type CliContext } from './context.js';

/** Turns "not found" into exit code 3 with a message naming the reference. */
async function found<T>(referenceId: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (err as { name?: string }).name === 'WorkflowNotFoundError') {
      throw new CliError(`no transaction with referenceId "${referenceId}" (list them with: npx esign list)`, Exit.notFound);
    }
    throw err;
  }
}

export async function status(ctx: CliContext, referenceId: string): Promise<EsignTransactionStatus> {
  return found(referenceId, () => getEsignStatus(ctx.client, referenceId));
}

export interface StartOptions {
  input?: string;
  file?: string[];
  storagePath?: string[];
  signer?: string[];
  referenceId?: string;
  title?: string;
  draft?: boolean;
  deadline?: string;
  reconcile?: string;
  signingUrl?: boolean;
}

/** "Ada Lovelace <ada@example.com>" → a participant. */
export function parseSigner(text: string): ParticipantInput {
  const match = /^\s*(.+?)\s+<([^>]+)>\s*$/.exec(text);
  if (!match) throw new CliError(`--signer must look like "First Last <email>", got "${text}"`, Exit.usage);
  const names = match[1]!.split(/\s+/);
  return {
    id: randomUUID(),
    firstName: names.slice(0, -1).join(' ') || names[0]!,
    lastName: names.length > 1 ? names.at(-1)! : '-',
    email: match[2]!,
    authenticationType: 'none',
    twoFactorContact: 'email',
  };
}

/** Builds the input from flags (one signature tag per signer on each first page) or reads it from a JSON file. */
export async function buildInput(ctx: CliContext, options: StartOptions): Promise<EsignTransactionInput> {
  if (options.input) {
    const raw: unknown = JSON.parse(await readFile(options.input, 'utf8'));
    const parsed = EsignTransactionInput.safeParse(raw);
    if (!parsed.success) throw new CliError(`${options.input}: ${describeIssues(parsed.error)}`, Exit.usage);
    return raw as EsignTransactionInput;
  }
  const signers = (options.signer ?? []).map(parseSigner);
  if (signers.length === 0) throw new CliError('give at least one --signer (or --input file.json)', Exit.usage);
  const sources: { title: string; storagePath: string; sha256?: string }[] = (options.storagePath ?? []).map((sp) => ({
    title: basename(sp, '.pdf'),
    storagePath: sp,
  }));
  if (options.file?.length) {
    // The CLI uploads local files itself, so they need not be on the worker's machine.
    const provider = await ctx.provider();
    const uploaded = await provider.uploadDocuments(options.file.map((path) => ({ path: resolve(path) })));
    // With each file's hash, so the archive checks the provider signed these very files.
    for (const [i, path] of options.file.entries()) {
      const { sha256 } = await hashFile(resolve(path));
      sources.push({ title: basename(path, '.pdf'), storagePath: uploaded[i]!.StoragePath, sha256 });
    }
  }
  if (sources.length === 0) throw new CliError('give at least one --file or --storage-path (or --input file.json)', Exit.usage);
  const documents: DocumentInput[] = sources.map((s) => ({
    title: s.title,
    source: { storagePath: s.storagePath, ...(s.sha256 ? { sha256: s.sha256 } : {}) },
    tags: signers.map((_, i) => ({
      type: 'SIGNATURETEMPLATE' as const,
      x: 72 + (i % 2) * 260,
      y: 100 + Math.floor(i / 2) * 60,
      width: 200,
      height: 36,
      page: 0,
      signerIndex: i,
    })),
  }));
  return {
    referenceId: options.referenceId ?? `cli-${Date.now().toString(36)}`,
    ...(options.title ? { title: options.title } : {}),
    documents,
    participants: signers,
    status: options.draft ? 'draft' : 'esign_pending',
    notifyParticipants: { email: false },
    ...(options.deadline ? { signingDeadline: options.deadline } : {}),
    ...(options.reconcile ? { reconcileInterval: options.reconcile } : {}),
  };
}

export async function start(ctx: CliContext, options: StartOptions) {
  const input = await buildInput(ctx, options);
  const first = input.participants[0]?.id;
  try {
    const started = await startEsignTransaction(ctx.client, input, {
      taskQueue: ctx.taskQueue,
      ...(options.signingUrl && first ? { signingUrlFor: { participantIds: [first] } } : {}),
    });
    return {
      referenceId: input.referenceId,
      workflowId: started.workflowId,
      participants: input.participants.map((p) => ({ id: p.id, name: `${p.firstName} ${p.lastName}` })),
      ...(started.signingUrl ? { signingUrl: started.signingUrl } : {}),
    };
  } catch (err) {
    if (err instanceof InvalidTransactionInput) throw new CliError(err.message, Exit.usage);
    throw err;
  }
}

export async function list(ctx: CliContext, options: { status?: string; provider?: boolean; limit?: number }) {
  const limit = options.limit ?? 50;
  if (options.provider) {
    const provider = await ctx.provider();
    const page = await provider.listTransactions({ limit, ...(options.status ? { status: options.status } : {}) });
    return {
      total: page.total,
      rows: page.data.map((t) => ({
        transactionId: t.id,
        referenceId: t.referenceId ?? null,
        status: t.status,
        documents: t.documents.length,
        updatedAt: t.updatedAt ?? null,
      })),
    };
  }
  // Visibility is eventually consistent: fine for operators, never used for routing.
  const filters = [`WorkflowType = '${WORKFLOW_TYPE}'`];
  if (options.status) {
    if (!/^[a-z_]+$/.test(options.status)) throw new CliError('--status must be a phase such as awaiting_signatures', Exit.usage);
    filters.push(`EsignStatus = '${options.status}'`);
  }
  const rows: Record<string, unknown>[] = [];
  for await (const wf of ctx.client.workflow.list({ query: filters.join(' AND ') })) {
    rows.push(row(wf));
    if (rows.length >= limit) break;
  }
  return { total: rows.length, rows };
}

function row(wf: WorkflowExecutionInfo): Record<string, unknown> {
  const sa = (name: string) => {
    const v = (wf.searchAttributes as Record<string, unknown[] | undefined>)[name];
    return Array.isArray(v) ? (v[0] ?? null) : null;
  };
  return {
    referenceId: sa('EsignReferenceId'),
    phase: sa('EsignStatus'),
    transactionId: sa('EsignTransactionId'),
    started: wf.startTime.toISOString(),
    workflowStatus: wf.status.name,
  };
}

export async function url(ctx: CliContext, referenceId: string, participantId: string) {
  return found(referenceId, () => issueSigningUrl(ctx.client, referenceId, { participantIds: [participantId] }));
}

/**
 * Signs or declines as a participant in the provider sandbox (ESIGN_PROVIDER_URL), for tests and demos without a
 * browser; refused with a usage error against anything that is not the sandbox (nothing is sent to it).
 */
export async function actAs(ctx: CliContext, referenceId: string, participantId: string, decline?: { reason?: string }) {
  const sandboxUrl = process.env.ESIGN_PROVIDER_URL ?? 'http://127.0.0.1:4010';
  try {
    return await found(referenceId, () =>
      actInSandbox(ctx.client, referenceId, participantId, {
        sandboxUrl,
        ...(process.env.SANDBOX_ADMIN_TOKEN ? { adminToken: process.env.SANDBOX_ADMIN_TOKEN } : {}),
        ...(decline ? { decline } : {}),
      }),
    );
  } catch (err) {
    if (err instanceof NotTheSandbox)
      throw new CliError(`${err.message} (esign sign and decline work only against the provider sandbox)`, Exit.usage);
    if (err instanceof SandboxActRefused) throw new CliError(err.message, Exit.failed);
    throw err;
  }
}

export async function cancel(ctx: CliContext, referenceId: string, reason?: string) {
  return found(referenceId, () => cancelEsignTransaction(ctx.client, referenceId, reason));
}

/**
 * Archives again a completed transaction whose ZIP was refused (phase archive_invalid), once its cause is fixed: the
 * transaction by its referenceId, or a late completion (archive_invalid too) by its transactionId or referenceId.
 */
export async function retryArchive(ctx: CliContext, id: string) {
  try {
    // Before `found`, which would say "no transaction with referenceId": the id named a late completion, now ended.
    return await found(id, () =>
      retryEsignArchive(ctx.client, id).catch((err: unknown) => {
        throw err instanceof LateCompletionEnded ? new CliError(err.message, Exit.notFound) : err;
      }),
    );
  } catch (err) {
    if (err instanceof AmbiguousArchiveRetry) throw new CliError(err.message, Exit.usage);
    throw err;
  }
}

/**
 * Copies the archived ZIP of a completed transaction and its manifest into `dir` (`<referenceId>.zip`,
 * `<referenceId>.manifest.json`), checking the ZIP's SHA-256 against the result and the manifest.
 */
export async function download(ctx: CliContext, referenceId: string, dir: string) {
  const handle = getEsignTransaction(ctx.client, referenceId);
  const described = await found(referenceId, () => handle.describe());
  if (described.status.name !== 'COMPLETED')
    throw new CliError(`transaction "${referenceId}" is ${described.status.name.toLowerCase()}, not completed`, Exit.notCompleted);
  const result: EsignTransactionResult = await handle.result();
  if (!result.archive) throw new CliError(`transaction "${referenceId}" ended ${result.status}: nothing archived`, Exit.notCompleted);
  // S3 through the AWS SDK and its default credential chain, as the workers reach it.
  const s3 = result.archive.uri.startsWith('s3:')
    ? s3Client({ region: process.env.ESIGN_ARCHIVE_S3_REGION ?? 'us-east-1', endpoint: process.env.ESIGN_ARCHIVE_S3_ENDPOINT })
    : undefined;
  let downloaded;
  try {
    downloaded = await downloadArchive(result, dir, {
      name: referenceId,
      ...(s3 ? { s3: sdkReader(s3) } : {}),
    });
  } catch (err) {
    if (err instanceof ArchiveDownloadRefused) {
      throw new CliError(err.reason === 'zip_mismatch' ? `SHA-256 mismatch: ${err.message}` : err.message, Exit.failed);
    }
    throw err;
  } finally {
    s3?.destroy();
  }
  return {
    file: downloaded.zip,
    manifest: downloaded.manifest,
    bytes: downloaded.bytes,
    sha256: downloaded.sha256,
    files: result.archive.files.map((f) => f.name),
    evidence: result.archive.evidence,
  };
}

/** `downloadArchive`'s S3 reader over the AWS SDK: a missing object is undefined. */
function sdkReader(s3: ReturnType<typeof s3Client>): S3ObjectReader {
  return {
    async getObject(bucket, key) {
      try {
        const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return object.Body as AsyncIterable<Uint8Array>;
      } catch (err) {
        if ((err as { name?: string }).name === 'NoSuchKey') return undefined;
        throw err;
      }
    },
  };
}
