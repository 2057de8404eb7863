/**
 * Handing a PDF to the orchestrator from a backend that shares no disk with the workers: the PDF goes to the
 * object store the workers read (`ESIGN_TEMPLATE_STORE`), by its SHA-256, and the transaction names it as
 * `{object: {sha256}}`. The worker reads it back, checks it is those bytes, a PDF within its size limit, and
 * uploads it to the provider; the archive then holds the provider to that hash (docs/evidence.md).
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { LocalObjectStore, type ObjectStore } from '../storage/object-store.js';
import { DEFAULT_MAX_DOCUMENT_BYTES, documentObjectKey, isPdfHead } from '../storage/documents.js';
import { S3HttpClient, S3HttpObjectStore } from '../storage/s3-http.js';

/** A document `uploadDocument` refused before storing anything: the worker would refuse it too. */
export class DocumentRefused extends Error {
  override readonly name = 'DocumentRefused';
  constructor(
    message: string,
    readonly reason: 'empty' | 'too_large' | 'not_pdf',
  ) {
    super(message);
  }
}

export interface UploadDocumentOptions {
  /**
   * The largest document accepted: the workers' `ESIGN_MAX_DOCUMENT_BYTES`. Default: that variable when set in this
   * process's environment, else the workers' default (25 MiB).
   */
  maxBytes?: number;
}

export interface UploadedDocument {
  /** What to put in the transaction's input: `documents: [{ title, source, tags }]`. */
  source: { object: { sha256: string } };
  /** SHA-256 (lowercase hex) of the bytes stored: what the archive holds the provider's original to. */
  sha256: string;
  bytes: number;
  /** Where it is in the store: `uploads/<sha256>.pdf`. */
  key: string;
}

/**
 * Stores a PDF (its bytes, or the path of a file on this machine) in the workers' object store under
 * `uploads/<sha256>.pdf`, after the checks the worker applies (not empty, within the size limit, starting with
 * `%PDF-`; else `DocumentRefused`), and returns the source naming it. Storing the same bytes again writes the same
 * object: it may be called as often as a retry needs.
 */
export async function uploadDocument(
  store: Pick<ObjectStore, 'put'>,
  document: Uint8Array | string,
  options: UploadDocumentOptions = {},
): Promise<UploadedDocument> {
  const maxBytes = options.maxBytes ?? envMaxBytes() ?? DEFAULT_MAX_DOCUMENT_BYTES;
  const bytes = typeof document === 'string' ? await readBounded(document, maxBytes) : Buffer.from(document);
  if (bytes.length === 0) throw new DocumentRefused('the document is empty', 'empty');
  if (bytes.length > maxBytes)
    throw new DocumentRefused(`the document is ${bytes.length} bytes, over the ${maxBytes}-byte limit`, 'too_large');
  if (!isPdfHead(bytes)) throw new DocumentRefused('the document is not a PDF (it does not start with %PDF-)', 'not_pdf');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const key = documentObjectKey(sha256);
  await store.put(key, bytes);
  return { source: { object: { sha256 } }, sha256, bytes: bytes.length, key };
}

/**
 * The store the workers' `ESIGN_TEMPLATE_STORE` names, read from `env` as they read it: a directory (shared with
 * them), or `s3://bucket/prefix` reached with `S3HttpClient.fromEnv(env)` (the workers' S3 endpoint and region,
 * static credentials). Undefined when the variable is unset.
 */
export function objectStoreFromEnv(env: NodeJS.ProcessEnv = process.env): ObjectStore | undefined {
  const location = env.ESIGN_TEMPLATE_STORE?.trim();
  if (!location) return undefined;
  const s3 = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(location);
  if (location.startsWith('s3:') && !s3)
    throw new RangeError(`ESIGN_TEMPLATE_STORE must be a directory or s3://bucket/prefix, not ${location}`);
  return s3 ? new S3HttpObjectStore(S3HttpClient.fromEnv(env), s3[1]!, s3[2] ?? '') : new LocalObjectStore(location);
}

function envMaxBytes(): number | undefined {
  const value = Number(process.env.ESIGN_MAX_DOCUMENT_BYTES);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** A file's bytes, refused without reading it all when it is over the limit. */
async function readBounded(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) throw new DocumentRefused(`the document is ${size} bytes, over the ${maxBytes}-byte limit`, 'too_large');
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
