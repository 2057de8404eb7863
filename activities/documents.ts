import { createHash } from 'node:crypto';
import { open, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve, sep, isAbsolute } from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { request } from 'undici';
import type { EsignClient, UploadSource } from '../src/esign/client.js';
import { hashFile, writeHashed } from '../src/util/streams.js';
import type { DocumentSource } from '../src/transaction/input.js';
import { FailureType, isRetryableStatus } from '../src/failures.js';
import { callProvider, whileHeartbeating } from './support/heartbeat.js';
import type { UrlPolicy } from './support/url-policy.js';
import { TemplateDocumentNotFound } from '../src/templates/errors.js';
import type { TemplateStore } from '../src/templates/store.js';

export interface DocumentDeps {
  client: EsignClient;
  /** Directories local `path` sources may be read from. */
  documentRoots: readonly string[];
  urlPolicy: UrlPolicy;
  maxDocumentBytes: number;
  /** Where template documents (`{template: {sha256}}` sources) are read from (ESIGN_TEMPLATE_STORE). */
  templates?: Pick<TemplateStore, 'readDocument' | 'location'>;
}

export interface UploadDocumentsInput {
  documents: { title: string; source: DocumentSource }[];
}

/** One StoragePath per input document, in order. */
export interface UploadDocumentsResult {
  storagePaths: string[];
  /** SHA-256 of each PDF this activity uploaded, by StoragePath, and of those the caller uploaded and gave a `sha256` for. */
  sha256?: Record<string, string>;
}

const invalid = (message: string) => ApplicationFailure.nonRetryable(message, FailureType.InvalidDocument);

async function checkPdf(path: string, label: string, maxBytes: number): Promise<number> {
  const { size } = await stat(path);
  if (size === 0) throw invalid(`${label} is empty`);
  if (size > maxBytes) throw invalid(`${label} is ${size} bytes, over the ${maxBytes}-byte limit`);
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(5);
    await handle.read(head, 0, 5, 0);
    if (head.toString('latin1') !== '%PDF-') throw invalid(`${label} is not a PDF`);
  } finally {
    await handle.close();
  }
  return size;
}

/** Resolves a local path inside one of the allowed roots (symlinks included), or refuses it. */
async function allowedPath(path: string, roots: readonly string[], label: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(resolve(path));
  } catch {
    throw invalid(`${label}: file not found`);
  }
  for (const root of roots) {
    const realRoot = await realpath(resolve(root)).catch(() => undefined);
    if (!realRoot) continue;
    const rel = relative(realRoot, real);
    if (rel && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel)) return real;
  }
  throw ApplicationFailure.nonRetryable(`${label}: local path is outside the allowed document roots`, FailureType.UrlNotAllowed);
}

export function createDocumentActivities(deps: DocumentDeps) {
  return {
    /** Fetches or reads each document that needs uploading, checks it is a PDF, and uploads them in one request. */
    async uploadDocuments(input: UploadDocumentsInput): Promise<UploadDocumentsResult> {
      const ctx = Context.current();
      const storagePaths: (string | undefined)[] = input.documents.map((d) =>
        'storagePath' in d.source ? d.source.storagePath : undefined,
      );
      // Hashes the caller gave for what it uploaded itself, beside the ones computed below.
      const sha256: Record<string, string> = {};
      for (const d of input.documents) if ('storagePath' in d.source && d.source.sha256) sha256[d.source.storagePath] = d.source.sha256;
      const pending = input.documents.map((d, i) => ({ d, i })).filter(({ d }) => !('storagePath' in d.source));
      if (pending.length === 0) return { storagePaths: storagePaths as string[], sha256 };
      const fromTemplate = pending.find(({ d }) => 'template' in d.source);
      if (fromTemplate && !deps.templates) {
        throw ApplicationFailure.nonRetryable(
          `documents[${fromTemplate.i}] (${fromTemplate.d.title}) is a template's document, but this worker has no template store: ` +
            'set ESIGN_TEMPLATE_STORE to the store the template was created in',
          FailureType.StoreNotConfigured,
        );
      }

      // Heartbeats cover reading, fetching and uploading: a killed worker is noticed in seconds.
      return whileHeartbeating(async () => {
        const scratch = await mkdtemp(join(tmpdir(), 'esign-upload-'));
        try {
          const files: UploadSource[] = [];
          const hashes: string[] = [];
          for (const { d, i } of pending) {
            const label = `documents[${i}] (${d.title})`;
            ctx.heartbeat({ preparing: i });
            if ('path' in d.source) {
              const path = await allowedPath(d.source.path, deps.documentRoots, label);
              await checkPdf(path, label, deps.maxDocumentBytes);
              files.push({ path, fileName: basename(path) });
              hashes.push((await hashFile(path)).sha256);
            } else if ('url' in d.source) {
              const url = deps.urlPolicy.check(d.source.url, `${label} source`);
              const target = join(scratch, `${i}.pdf`);
              await download(url, target, deps.maxDocumentBytes, label, ctx.cancellationSignal);
              await checkPdf(target, label, deps.maxDocumentBytes);
              files.push({ path: target, fileName: safeName(url.pathname, i) });
              hashes.push((await hashFile(target)).sha256);
            } else if ('template' in d.source) {
              const target = join(scratch, `${i}.pdf`);
              await writeFile(target, await templateDocument(deps.templates!, d.source.template, label));
              await checkPdf(target, label, deps.maxDocumentBytes);
              files.push({
                path: target,
                fileName: `${d.title.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || `document-${i + 1}`}.pdf`,
              });
              // The hash the template names: what the archive holds the provider's original to, as for a caller's upload.
              hashes.push(d.source.template.sha256);
            }
          }
          ctx.heartbeat({ uploading: files.length });
          const uploaded = await callProvider(() => deps.client.uploadDocuments(files, { signal: ctx.cancellationSignal }));
          pending.forEach(({ i }, k) => {
            storagePaths[i] = uploaded[k]!.StoragePath;
            sha256[uploaded[k]!.StoragePath] = hashes[k]!;
          });
          return { storagePaths: storagePaths as string[], sha256 };
        } finally {
          await rm(scratch, { recursive: true, force: true });
        }
      });
    },
  };
}

/** A template document's bytes, exactly those its SHA-256 names; a store that lacks it fails the upload for good. */
async function templateDocument(
  templates: NonNullable<DocumentDeps['templates']>,
  source: { sha256: string; ref?: string | undefined },
  label: string,
): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await templates.readDocument(source.sha256);
  } catch (err) {
    if (err instanceof TemplateDocumentNotFound) {
      throw invalid(
        `${label}: ${err.message}${source.ref ? ` (template ${source.ref})` : ''}; is the worker's ESIGN_TEMPLATE_STORE the one the template was created in?`,
      );
    }
    // The store is unreachable or failing: worth another attempt.
    throw ApplicationFailure.retryable(
      `${label}: cannot read from ${templates.location}: ${(err as Error).message}`,
      FailureType.DocumentSourceUnavailable,
    );
  }
  // Checked here too: the archive relies on this hash, whatever store implementation answered.
  if (createHash('sha256').update(bytes).digest('hex') !== source.sha256) {
    throw invalid(`${label}: the template store's copy of ${source.sha256} does not match its SHA-256`);
  }
  return bytes;
}

function safeName(pathname: string, i: number): string {
  const name = basename(decodeURIComponent(pathname)).replace(/[^A-Za-z0-9._-]+/g, '_');
  return name.toLowerCase().endsWith('.pdf') ? name : `document-${i + 1}.pdf`;
}

async function download(url: URL, target: string, maxBytes: number, label: string, signal: AbortSignal): Promise<void> {
  let res;
  try {
    // undici's request never follows redirects: a 3xx comes back as it is.
    res = await request(url, { method: 'GET', signal, headersTimeout: 30_000, bodyTimeout: 60_000 });
  } catch (err) {
    throw ApplicationFailure.retryable(
      `${label}: cannot fetch ${url.origin}: ${(err as Error).message}`,
      FailureType.DocumentSourceUnavailable,
    );
  }
  if (res.statusCode >= 300 && res.statusCode < 400) {
    await res.body.dump();
    throw ApplicationFailure.nonRetryable(
      `${label}: source URL redirects (${res.statusCode}); redirects are not followed`,
      FailureType.UrlNotAllowed,
    );
  }
  if (res.statusCode !== 200) {
    await res.body.dump();
    const retryable = isRetryableStatus(res.statusCode);
    const message = `${label}: source URL answered HTTP ${res.statusCode}`;
    throw retryable ? ApplicationFailure.retryable(message, FailureType.DocumentSourceUnavailable) : invalid(message);
  }
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body.dump();
    throw invalid(`${label} is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  let tooBig = false;
  await writeHashed(res.body, target, {
    onProgress: (bytes) => {
      if (bytes > maxBytes && !tooBig) {
        tooBig = true;
        res.body.destroy(new Error('too large'));
      }
    },
  }).catch((err: unknown) => {
    if (tooBig) throw invalid(`${label} is over the ${maxBytes}-byte limit`);
    throw ApplicationFailure.retryable(`${label}: download failed: ${(err as Error).message}`, FailureType.DocumentSourceUnavailable);
  });
}
