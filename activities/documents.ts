import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open, mkdtemp, readlink, realpath, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve, sep, isAbsolute } from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { request } from 'undici';
import type { EsignClient, UploadSource } from '../src/esign/client.js';
import type { DocumentSource } from '../src/transaction/input.js';
import { FailureType, isRetryableStatus } from '../src/failures.js';
import { policyRefusal } from '../src/http/outbound.js';
import { callProvider, whileHeartbeating } from './support/heartbeat.js';
import type { UrlPolicy } from './support/url-policy.js';
import { TemplateDocumentNotFound } from '../src/templates/errors.js';
import type { TemplateStore } from '../src/templates/store.js';
import { ObjectRefused, type ObjectStore } from '../src/storage/object-store.js';
import { documentObjectKey, isPdfHead } from '../src/storage/documents.js';

export interface DocumentDeps {
  client: EsignClient;
  /**
   * Directories local `path` sources may be read from. Below a root no symbolic link is followed: a path must
   * name the file itself, through directories (see `openUnderRoots`).
   */
  documentRoots: readonly string[];
  urlPolicy: UrlPolicy;
  maxDocumentBytes: number;
  /** Where template documents (`{template: {sha256}}` sources) are read from (ESIGN_TEMPLATE_STORE). */
  templates?: Pick<TemplateStore, 'readDocument' | 'location'>;
  /**
   * Where `{object: {sha256}}` sources are read from: the object store of ESIGN_TEMPLATE_STORE, at
   * `uploads/<sha256>.pdf` (docs/decisions/document-object-store.md).
   */
  objects?: Pick<ObjectStore, 'get' | 'location'>;
  /**
   * The longest a URL source's download may take, headers and body (default 5 minutes). A source that trickles
   * (a byte every few seconds never trips a between-chunks timeout) is cut off here and refused as retryable,
   * rather than holding the activity's slot until its start-to-close timeout.
   */
  downloadTimeoutMs?: number;
}

export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

export interface UploadDocumentsInput {
  documents: { title: string; source: DocumentSource }[];
}

/** One StoragePath per input document, in order. */
export interface UploadDocumentsResult {
  storagePaths: string[];
  /** SHA-256 of each PDF this activity uploaded, by StoragePath, and of those the caller uploaded and gave a `sha256` for. */
  sha256?: Record<string, string>;
}

// Every failure message here names a document by its position only (`documents[0]`): they are kept in Temporal's
// history, and a title, a file's path or name, or a URL's path or query may hold a person's name or e-mail.

const invalid = (message: string) => ApplicationFailure.nonRetryable(message, FailureType.InvalidDocument);
const unavailable = (message: string) => ApplicationFailure.retryable(message, FailureType.DocumentSourceUnavailable);
const notAllowed = (message: string) => ApplicationFailure.nonRetryable(message, FailureType.UrlNotAllowed);
/** Refused without looking outside the roots: whether such a file exists is not told either. */
const outsideRoots = (label: string) =>
  notAllowed(`${label}: file not found under the document roots: local path is outside the allowed document roots`);

/** A document ready to upload: one open descriptor, the only one its bytes are ever read through. */
interface OpenDocument {
  handle: FileHandle;
  /** From fstat of that descriptor: what is announced and sent. */
  size: number;
  mtimeMs: number;
  fileName: string;
}

const { O_RDONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK, O_NOCTTY } = fsConstants;
/** Linux's view of this process's descriptors: `/proc/self/fd/<n>` is the very file (or directory) open as n. */
const PROC_FD = '/proc/self/fd';

function beneath(base: string, path: string): string[] | undefined {
  const rel = relative(base, path);
  if (!rel || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return rel.split(sep);
}

/**
 * Opens a caller's local path for reading, once, only if it names a regular file under one of the roots, and
 * returns that descriptor; nothing opens the path again (the file is checked, hashed and uploaded through it).
 *
 * Why this is race-free. Resolving a path (realpath) and then opening it again is not: between the two, anyone
 * who may write under a root can replace a file or a directory on the path with a symbolic link to a file
 * outside the roots. Node has no openat(2), but on Linux `/proc/self/fd/<dirfd>/<name>` is one: the kernel goes
 * from the magic link straight to the directory open as `dirfd`, whatever its name is now, and looks up `name`
 * there. So the path is opened one component at a time, from a descriptor of the (trusted, operator-configured)
 * root, each directory with O_DIRECTORY|O_NOFOLLOW and the file with O_NOFOLLOW: a symbolic link at any
 * component below the root fails the open (ELOOP or ENOTDIR) instead of being followed, and there is no `..` to
 * climb with. What is opened is therefore reached from the root by real directory entries at the moment of each
 * lookup; a swap can only make the open fail or open another file that is just as much under the root.
 * O_NONBLOCK keeps a FIFO from blocking the open, and fstat of the descriptor then requires a regular file. As a
 * second guard, the kernel's own name for the open file (readlink of `/proc/self/fd/<fd>`) must lie under the
 * root. Without /proc (not Linux) path sources are refused: there is no race-free way to open them there.
 *
 * The path is taken as written (made absolute, `.` and `..` resolved as text, never through the file system),
 * spelled either through a root as configured or through its real path.
 */
async function openUnderRoots(path: string, roots: readonly string[], label: string): Promise<FileHandle> {
  const wanted = resolve(path);
  for (const root of roots) {
    const configured = resolve(root);
    const realRoot = await realpath(configured).catch(() => undefined);
    if (!realRoot) continue;
    const parts = beneath(configured, wanted) ?? beneath(realRoot, wanted);
    if (parts) return openBeneath(realRoot, parts, label);
  }
  throw outsideRoots(label);
}

async function openBeneath(realRoot: string, parts: readonly string[], label: string): Promise<FileHandle> {
  if (parts.some((p) => p === '' || p === '.' || p === '..')) throw outsideRoots(label);
  let dir: FileHandle;
  try {
    dir = await open(realRoot, O_RDONLY | O_DIRECTORY);
  } catch (err) {
    throw openFailure(err, label);
  }
  let file: FileHandle | undefined;
  try {
    // The root as opened must be the root as resolved (it is trusted, but its parents might not be); this also
    // proves /proc/self/fd is there to walk through.
    const rootName = await kernelName(dir);
    if (rootName === undefined) {
      throw notAllowed(`${label}: this worker cannot open local paths safely (no /proc/self/fd); give the document by URL or upload it`);
    }
    if (rootName !== realRoot) throw unavailable(`${label}: the document root changed while it was opened`);
    try {
      for (const part of parts.slice(0, -1)) {
        const next = await open(`${PROC_FD}/${dir.fd}/${part}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        await dir.close();
        dir = next;
      }
      file = await open(`${PROC_FD}/${dir.fd}/${parts[parts.length - 1]!}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    } catch (err) {
      throw openFailure(err, label);
    }
    const st = await file.stat();
    if (!st.isFile()) throw invalid(`${label}: local path is not a regular file`);
    // A hard link under a root names a file that may live anywhere on its filesystem: every walk above sees
    // only the link's path, so a file with more than one name is refused.
    if (st.nlink > 1) throw notAllowed(`${label}: local path is a file with several names (a hard link); it is refused`);
    const name = await kernelName(file);
    if (name === undefined || !beneath(realRoot, name)) throw outsideRoots(label);
    const opened = file;
    file = undefined;
    return opened;
  } finally {
    await dir.close();
    await file?.close();
  }
}

/** The kernel's name for what a descriptor has open (Linux), or undefined without /proc. */
function kernelName(handle: FileHandle): Promise<string | undefined> {
  return readlink(`${PROC_FD}/${handle.fd}`).catch(() => undefined);
}

function openFailure(err: unknown, label: string): ApplicationFailure {
  const code = (err as NodeJS.ErrnoException).code;
  if (err instanceof ApplicationFailure) return err;
  switch (code) {
    case 'ENOENT':
      return invalid(`${label}: file not found under the document roots`);
    case 'ELOOP':
    case 'ENOTDIR':
      return notAllowed(
        `${label}: local path goes through a symbolic link or a non-directory; links are not followed under the document roots`,
      );
    case 'EACCES':
    case 'EPERM':
      return invalid(`${label}: the worker may not read this file`);
    // A path no file can have (a NUL byte, a name over the filesystem's limit): asking again cannot help.
    case 'ERR_INVALID_ARG_VALUE':
    case 'ERR_INVALID_ARG_TYPE':
    case 'ENAMETOOLONG':
      return invalid(`${label}: local path is not a valid file name`);
    default:
      return unavailable(`${label}: cannot open the file (${code ?? 'error'})`);
  }
}

/** Checks an open document: a regular file, not empty, within the size limit, starting as a PDF. */
async function inspect(handle: FileHandle, fileName: string, label: string, maxBytes: number): Promise<OpenDocument> {
  const st = await handle.stat();
  if (!st.isFile()) throw invalid(`${label} is not a regular file`);
  if (st.size === 0) throw invalid(`${label} is empty`);
  if (st.size > maxBytes) throw invalid(`${label} is ${st.size} bytes, over the ${maxBytes}-byte limit`);
  const head = Buffer.alloc(5);
  await handle.read(head, 0, 5, 0);
  if (!isPdfHead(head)) throw invalid(`${label} is not a PDF`);
  return { handle, size: st.size, mtimeMs: st.mtimeMs, fileName };
}

/**
 * The bytes of an open document as sent, read through its descriptor only, from offset 0 to the size fstat gave:
 * hashed as they pass, so the SHA-256 recorded is that of exactly what the provider received. A document that
 * stops being a PDF, shrinks or changes while it is read fails the upload before its body is complete.
 */
async function* sendAndHash(doc: OpenDocument, label: string, done: (sha256: string) => void, fail: (f: ApplicationFailure) => never) {
  const hash = createHash('sha256');
  let position = 0;
  while (position < doc.size) {
    const chunk = Buffer.allocUnsafe(Math.min(256 * 1024, doc.size - position));
    const { bytesRead } = await doc.handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) fail(unavailable(`${label} shrank while it was uploaded`));
    const bytes = chunk.subarray(0, bytesRead);
    if (position === 0 && (bytes.length < 5 || !isPdfHead(bytes))) fail(invalid(`${label} is not a PDF`));
    hash.update(bytes);
    position += bytesRead;
    yield bytes;
  }
  const after = await doc.handle.stat();
  if (after.size !== doc.size || after.mtimeMs !== doc.mtimeMs) fail(unavailable(`${label} changed while it was uploaded`));
  done(hash.digest('hex'));
}

export function createDocumentActivities(deps: DocumentDeps) {
  const downloadTimeoutMs = deps.downloadTimeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS;
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
          `documents[${fromTemplate.i}] is a template's document, but this worker has no template store: ` +
            'set ESIGN_TEMPLATE_STORE to the store the template was created in',
          FailureType.StoreNotConfigured,
        );
      }
      const fromStore = pending.find(({ d }) => 'object' in d.source);
      if (fromStore && !deps.objects) {
        throw ApplicationFailure.nonRetryable(
          `documents[${fromStore.i}] is in an object store, but this worker has none: ` +
            'set ESIGN_TEMPLATE_STORE to the store the document was uploaded to (uploadDocument)',
          FailureType.StoreNotConfigured,
        );
      }

      // Heartbeats cover reading, fetching and uploading: a killed worker is noticed in seconds.
      return whileHeartbeating(async () => {
        const scratch = await mkdtemp(join(tmpdir(), 'esign-upload-'));
        const docs: OpenDocument[] = [];
        const handles: FileHandle[] = [];
        try {
          for (const { d, i } of pending) {
            const label = `documents[${i}]`;
            ctx.heartbeat({ preparing: i });
            if ('path' in d.source) {
              const handle = await openUnderRoots(d.source.path, deps.documentRoots, label);
              handles.push(handle);
              docs.push(await inspect(handle, basename(d.source.path), label, deps.maxDocumentBytes));
            } else if ('url' in d.source) {
              const url = deps.urlPolicy.check(d.source.url, `${label} source`);
              const handle = await createScratch(scratch, i);
              handles.push(handle);
              await download(url, handle, deps.maxDocumentBytes, label, ctx.cancellationSignal, downloadTimeoutMs);
              docs.push(await inspect(handle, safeName(urlFileName(url), i), label, deps.maxDocumentBytes));
            } else if ('template' in d.source) {
              const handle = await createScratch(scratch, i);
              handles.push(handle);
              await handle.writeFile(await templateDocument(deps.templates!, d.source.template, label));
              docs.push(await inspect(handle, titleFileName(d.title, i), label, deps.maxDocumentBytes));
            } else if ('object' in d.source) {
              const handle = await createScratch(scratch, i);
              handles.push(handle);
              await handle.writeFile(await storedDocument(deps.objects!, d.source.object.sha256, label, deps.maxDocumentBytes));
              docs.push(await inspect(handle, titleFileName(d.title, i), label, deps.maxDocumentBytes));
            }
          }

          const hashes: string[] = [];
          let sourceFailure: ApplicationFailure | undefined;
          const fail = (f: ApplicationFailure): never => {
            sourceFailure ??= f;
            throw f;
          };
          const files: UploadSource[] = docs.map((doc, k) => ({
            stream: sendAndHash(doc, `documents[${pending[k]!.i}]`, (h) => (hashes[k] = h), fail),
            size: doc.size,
            fileName: doc.fileName,
          }));
          ctx.heartbeat({ uploading: files.length });
          let uploaded;
          try {
            uploaded = await callProvider(() => deps.client.uploadDocuments(files, { signal: ctx.cancellationSignal }));
          } catch (err) {
            if (sourceFailure) throw sourceFailure;
            // The provider may quote a file's name (a title, for a template's document): name its position instead.
            throw withoutNames(
              err,
              docs.map((doc, k) => [doc.fileName, `documents[${pending[k]!.i}]`]),
            );
          }
          for (const [k, { d, i }] of pending.entries()) {
            // A template's document must be the bytes its SHA-256 names: what the archive holds the provider's original to.
            if ('template' in d.source && hashes[k] !== d.source.template.sha256) {
              throw unavailable(`documents[${i}]: the uploaded copy of the template's document does not match its SHA-256`);
            }
            if ('object' in d.source && hashes[k] !== d.source.object.sha256) {
              throw unavailable(`documents[${i}]: the uploaded copy of the stored document does not match its SHA-256`);
            }
            storagePaths[i] = uploaded[k]!.StoragePath;
            sha256[uploaded[k]!.StoragePath] = hashes[k]!;
          }
          return { storagePaths: storagePaths as string[], sha256 };
        } finally {
          await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
          await rm(scratch, { recursive: true, force: true });
        }
      });
    },
  };
}

/**
 * A new file in the activity's own scratch directory (mkdtemp: mode 0700, this process's), created exclusively
 * and never through a link, written and read back through this one descriptor.
 */
function createScratch(scratch: string, i: number): Promise<FileHandle> {
  return open(join(scratch, `${i}.pdf`), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
}

/** The failure with each name replaced by what stands for it, in its message and details. */
function withoutNames(err: unknown, names: readonly [string, string][]): unknown {
  if (!(err instanceof ApplicationFailure) || !err.message) return err;
  const scrub = (text: string) => names.reduce((t, [name, by]) => (name.length > 0 ? t.split(name).join(by) : t), text);
  const message = scrub(err.message);
  const details = err.details ? (JSON.parse(scrub(JSON.stringify(err.details))) as unknown[]) : undefined;
  if (message === err.message && JSON.stringify(details) === JSON.stringify(err.details)) return err;
  return new ApplicationFailure(message, err.type, err.nonRetryable, details, undefined, err.nextRetryDelay, err.category);
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

/** The name a document is uploaded under when its source has none: its title, made safe. */
function titleFileName(title: string, i: number): string {
  return `${title.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || `document-${i + 1}`}.pdf`;
}

/**
 * A stored document's bytes (`{object: {sha256}}`), exactly those its SHA-256 names. An object that is missing,
 * over the size limit or not those bytes fails the upload for good (InvalidDocument); a store that cannot be read
 * is worth another attempt.
 */
async function storedDocument(
  objects: NonNullable<DocumentDeps['objects']>,
  sha256: string,
  label: string,
  maxBytes: number,
): Promise<Buffer> {
  const key = documentObjectKey(sha256);
  let bytes: Buffer | undefined;
  try {
    // Bounded by the store while it reads: an object of gigabytes is refused, not held in memory (on every retry).
    bytes = await objects.get(key, { maxBytes });
  } catch (err) {
    // Too large, or (a directory store) a symbolic link, a FIFO or a device at the key: no attempt will read it.
    if (err instanceof ObjectRefused) throw invalid(`${label}: the stored ${err.message}`);
    throw ApplicationFailure.retryable(
      `${label}: cannot read ${key} from ${objects.location}: ${(err as Error).message}`,
      FailureType.DocumentSourceUnavailable,
    );
  }
  if (bytes === undefined) {
    throw invalid(
      `${label}: no document ${key} in ${objects.location}; was it uploaded (uploadDocument) to the store this worker's ESIGN_TEMPLATE_STORE names?`,
    );
  }
  if (bytes.length > maxBytes) throw invalid(`${label} is ${bytes.length} bytes, over the ${maxBytes}-byte limit`);
  // The archive relies on this hash: the bytes uploaded must be the ones the input names, whoever wrote the object.
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== sha256) {
    throw invalid(`${label}: the stored ${key} does not match its SHA-256 (its bytes hash to ${actual}); it was altered or replaced`);
  }
  return bytes;
}

function urlFileName(url: URL): string {
  try {
    return basename(decodeURIComponent(url.pathname));
  } catch {
    return basename(url.pathname); // malformed %-escapes: the name as written
  }
}

function safeName(name: string, i: number): string {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_');
  return safe.toLowerCase().endsWith('.pdf') ? safe : `document-${i + 1}.pdf`;
}

/**
 * Downloads a URL source into `target` (the activity's own file), within `timeoutMs` in all: undici's timeouts
 * bound only the wait for headers and each silence between chunks, so a source that sends a byte every few
 * seconds would otherwise hold the activity until its start-to-close timeout.
 */
async function download(
  url: URL,
  target: FileHandle,
  maxBytes: number,
  label: string,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<void> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error(`no complete download within ${timeoutMs} ms`)), timeoutMs);
  const stalled = () =>
    unavailable(
      `${label}: source URL ${url.origin} did not deliver the document within ${describeMs(timeoutMs)}; ` +
        'refused as stalled (it will be tried again)',
    );
  const both = AbortSignal.any([signal, deadline.signal]);
  try {
    let res;
    try {
      // undici's request never follows redirects: a 3xx comes back as it is.
      res = await request(url, { method: 'GET', signal: both, headersTimeout: 30_000, bodyTimeout: 60_000 });
    } catch (err) {
      if (deadline.signal.aborted) throw stalled();
      const refused = policyRefusal(err);
      if (refused) throw notAllowed(`${label}: source URL refused: ${refused.message}`);
      throw unavailable(`${label}: cannot fetch ${url.origin}: ${(err as Error).message}`);
    }
    // What is left of a refused body is dropped with its connection (dump() would wait for a trickle).
    res.body.on('error', () => undefined);
    const discard = () => res.body.destroy();
    if (res.statusCode >= 300 && res.statusCode < 400) {
      discard();
      throw notAllowed(`${label}: source URL redirects (${res.statusCode}); redirects are not followed`);
    }
    if (res.statusCode !== 200) {
      discard();
      const message = `${label}: source URL answered HTTP ${res.statusCode}`;
      throw isRetryableStatus(res.statusCode) ? unavailable(message) : invalid(message);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      discard();
      throw invalid(`${label} is ${declared} bytes, over the ${maxBytes}-byte limit`);
    }
    let position = 0;
    try {
      for await (const chunk of res.body) {
        const bytes = chunk as Buffer;
        if (position + bytes.length > maxBytes) {
          discard();
          throw invalid(`${label} is over the ${maxBytes}-byte limit`);
        }
        await target.write(bytes, 0, bytes.length, position);
        position += bytes.length;
      }
    } catch (err) {
      if (err instanceof ApplicationFailure) throw err;
      if (deadline.signal.aborted) throw stalled();
      throw unavailable(`${label}: download failed: ${(err as Error).message}`);
    }
  } finally {
    clearTimeout(timer);
  }
}

function describeMs(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}
