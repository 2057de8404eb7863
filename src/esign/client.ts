import { randomUUID } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { describeIssues } from '../util/zod-issues.js';
import { classifyTransportError, EsignApiError, neverSent, parseRetryAfter, redact } from './errors.js';
import {
  CreateTransactionRequest,
  IframeRequest,
  IframeResponse,
  ListTransactionsQuery,
  ListEnvelope,
  ListTransactionsResponse,
  normalizeUploadResponse,
  ProblemDetails,
  TransactionRecord,
  UpdateTransactionRequest,
  UploadResponse,
  type UploadedDocument,
} from './schemas.js';

export interface EsignClientOptions {
  /** e.g. `https://api.provider.example/v1`; a path prefix is kept. */
  baseUrl: string;
  /** The JWT, or a function returning a fresh one (tokens expire). */
  token: string | (() => string | Promise<string>);
  /** PEM CA bundle for a provider (or sandbox) with a private CA. */
  ca?: string | Buffer;
  connectTimeoutMs?: number;
  /** Time to wait for response headers. */
  headersTimeoutMs?: number;
  /** Longest silence allowed between two body chunks (not the whole body). */
  bodyTimeoutMs?: number;
  /** Connections kept to the provider. */
  connections?: number;
  userAgent?: string;
}

/**
 * A file to upload: a path on disk (streamed), a Blob (e.g. a file-backed one), or exactly `size` bytes read
 * while the request is sent (e.g. from a descriptor already open, so that no path is opened again). A stream
 * that yields more or fewer bytes than `size`, or throws, aborts the request: the provider never gets a whole body.
 */
export type UploadSource =
  | { path: string; fileName?: string }
  | { blob: Blob; fileName: string }
  | { stream: AsyncIterable<Uint8Array>; size: number; fileName: string };

export interface CallOptions {
  signal?: AbortSignal;
}

export interface CompletedDocumentsDownload {
  /** The ZIP, streamed. The caller must consume or destroy it. */
  body: Readable;
  contentLength: number | undefined;
  contentType: string | undefined;
}

const MAX_ERROR_BODY = 16 * 1024;
/**
 * The largest JSON answer read (the spec's largest, a transaction with 50 documents and participants and their
 * tags, is a few hundred KiB): a provider, or whatever answers in its place, cannot make the worker hold more.
 */
const MAX_JSON_BODY = 8 * 1024 * 1024;

/**
 * Typed client for the provider API (../shared/spec/esign-api.md). Every
 * request and response is validated with the shared schemas; every failure is
 * an {@link EsignApiError} that says whether retrying can help. The token never
 * appears in an error.
 */
/** How late past its timeout undici may give up on a request (its timers tick about twice a second). */
const TIMEOUT_RESOLUTION_MS = 1_000;

export class EsignClient {
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #token: EsignClientOptions['token'];
  readonly #userAgent: string;

  /**
   * How long a request goes unanswered before this client gives up on it (connect, then the response's headers): a
   * request given up on may still reach the provider, as late as this after it was given up (activities/transactions.ts).
   */
  readonly abandonsAfterMs: number;

  constructor(options: EsignClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(`baseUrl must be http(s), got ${url.protocol}`);
    }
    this.#prefix = url.pathname.replace(/\/+$/, '');
    this.#token = options.token;
    this.#userAgent = options.userAgent ?? 'esign-orchestrator';
    // undici's timeouts run on a coarse clock: a request is given up on up to about a second past its timeout.
    this.abandonsAfterMs = (options.connectTimeoutMs ?? 10_000) + (options.headersTimeoutMs ?? 30_000) + TIMEOUT_RESOLUTION_MS;
    this.#pool = new Pool(url.origin, {
      connections: options.connections ?? 16,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      headersTimeout: options.headersTimeoutMs ?? 30_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
      ...(options.ca ? { connect: { ca: options.ca } } : {}),
    });
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  /** `POST /documents/upload` (4.1): one multipart part `files` per file, each streamed from its source. */
  async uploadDocuments(files: readonly UploadSource[], options: CallOptions = {}): Promise<UploadedDocument[]> {
    const operation = 'uploadDocuments';
    if (files.length === 0) {
      throw new EsignApiError({ kind: 'invalid_request', operation, message: 'at least one file is required' });
    }
    const parts: MultipartFile[] = [];
    for (const file of files) {
      if ('path' in file) {
        let blob: Blob;
        try {
          blob = await openAsBlob(file.path, { type: 'application/pdf' });
        } catch (cause) {
          throw new EsignApiError({ kind: 'invalid_request', operation, message: `cannot read ${file.path}`, cause });
        }
        parts.push({ fileName: file.fileName ?? basename(file.path), type: blob.type, size: blob.size, body: () => blob.stream() });
      } else if ('blob' in file) {
        const { blob } = file;
        parts.push({ fileName: file.fileName, type: blob.type, size: blob.size, body: () => blob.stream() });
      } else {
        parts.push({ fileName: file.fileName, type: 'application/pdf', size: file.size, body: () => file.stream });
      }
    }
    const body = multipart('files', parts);
    const uploaded = normalizeUploadResponse(
      await this.#json(operation, { method: 'POST', path: '/documents/upload', body }, UploadResponse, options),
    );
    if (uploaded.length !== files.length) {
      throw new EsignApiError({
        kind: 'invalid_response',
        operation,
        message: `sent ${files.length} file(s) but the provider returned ${uploaded.length} storage path(s)`,
      });
    }
    return uploaded;
  }

  /** `POST /transactions` (4.2). The record may lack `id`/`esignId` (the short response form). */
  async createTransaction(request: CreateTransactionRequest, options: CallOptions = {}): Promise<TransactionRecord> {
    const body = validateRequest('createTransaction', CreateTransactionRequest, request);
    return this.#json('createTransaction', { method: 'POST', path: '/transactions', json: body }, TransactionRecord, options);
  }

  /** `GET /transactions/{id}` (4.3). */
  async getTransaction(id: string, options: CallOptions = {}): Promise<TransactionRecord> {
    return this.#json('getTransaction', { method: 'GET', path: `/transactions/${encodeId(id)}` }, TransactionRecord, options);
  }

  /** `PUT /transactions/{id}` (4.4, method chosen): replaces the transaction's data. */
  async updateTransaction(id: string, request: UpdateTransactionRequest, options: CallOptions = {}): Promise<TransactionRecord> {
    const body = validateRequest('updateTransaction', UpdateTransactionRequest, request);
    return this.#json(
      'updateTransaction',
      { method: 'PUT', path: `/transactions/${encodeId(id)}`, json: body },
      TransactionRecord,
      options,
    );
  }

  /** `GET /transactions?status=&limit=&offset=` (4.5, path and query chosen). */
  async listTransactions(query: ListTransactionsQuery = {}, options: CallOptions = {}): Promise<ListTransactionsResponse> {
    const q = validateRequest('listTransactions', ListTransactionsQuery, query);
    const params = new URLSearchParams({ limit: String(q.limit), offset: String(q.offset) });
    if (q.status !== undefined) params.set('status', q.status);
    return this.#json('listTransactions', { method: 'GET', path: `/transactions?${params.toString()}` }, ListTransactionsResponse, options);
  }

  /** `GET /transactions?limit=1`, read for its envelope only: whether the provider answers its list at all. */
  async answersItsList(options: CallOptions = {}): Promise<void> {
    await this.#json('listTransactions', { method: 'GET', path: '/transactions?limit=1&offset=0' }, ListEnvelope, options);
  }

  /** `GET /transactions/{id}/documents?type=completed` (4.6): the ZIP as a stream, never buffered. */
  async downloadCompletedDocuments(id: string, options: CallOptions = {}): Promise<CompletedDocumentsDownload> {
    const operation = 'downloadCompletedDocuments';
    const response = await this.#send(
      operation,
      { method: 'GET', path: `/transactions/${encodeId(id)}/documents?type=completed`, accept: 'application/zip' },
      options,
    );
    const length = response.headers['content-length'];
    const type = response.headers['content-type'];
    return {
      body: response.body,
      contentLength: typeof length === 'string' && /^\d+$/.test(length) ? Number(length) : undefined,
      contentType: typeof type === 'string' ? type : undefined,
    };
  }

  /** `POST /iframe-request` (4.7): the address to load in the signing iframe. */
  async createIframeUrl(request: IframeRequest, options: CallOptions = {}): Promise<string> {
    const body = validateRequest('createIframeUrl', IframeRequest, request);
    const { url } = await this.#json('createIframeUrl', { method: 'POST', path: '/iframe-request', json: body }, IframeResponse, options);
    return url;
  }

  async #json<S extends z.ZodType>(operation: string, request: RequestSpec, schema: S, options: CallOptions): Promise<z.output<S>> {
    const response = await this.#send(operation, { ...request, accept: 'application/json' }, options);
    const text = await readBounded(response.body, MAX_JSON_BODY);
    if (text === undefined) {
      throw new EsignApiError({
        kind: 'invalid_response',
        operation,
        status: response.statusCode,
        message: `response body is over ${MAX_JSON_BODY} bytes (HTTP ${response.statusCode})`,
      });
    }
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch (cause) {
      throw new EsignApiError({
        kind: 'invalid_response',
        operation,
        status: response.statusCode,
        message: `response body is not JSON (HTTP ${response.statusCode})`,
        cause,
      });
    }
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      throw new EsignApiError({
        kind: 'invalid_response',
        operation,
        status: response.statusCode,
        message: `response does not match the contract: ${describeIssues(parsed.error)}`,
      });
    }
    return parsed.data;
  }

  /** Sends one request; resolves with a 2xx response, rejects with a classified error otherwise. */
  async #send(operation: string, request: RequestSpec, options: CallOptions): Promise<Dispatcher.ResponseData> {
    const token = typeof this.#token === 'function' ? await this.#token() : this.#token;
    const scrub = (text: string) => redact(text, [token]);
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      accept: request.accept ?? 'application/json',
      'user-agent': this.#userAgent,
    };
    let body: Dispatcher.DispatchOptions['body'];
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.json);
    } else if (request.body !== undefined) {
      headers['content-type'] = request.body.contentType;
      headers['content-length'] = String(request.body.length);
      body = request.body.stream();
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#pool.request({
        method: request.method,
        path: this.#prefix + request.path,
        headers,
        body,
        signal: options.signal,
      });
    } catch (cause) {
      const kind = classifyTransportError(cause);
      const detail = cause instanceof Error ? `${(cause as { code?: string }).code ?? cause.name}: ${cause.message}` : String(cause);
      throw new EsignApiError({
        kind,
        operation,
        unsent: neverSent(cause),
        message: `${request.method} ${request.path} failed before a response (${scrub(detail)})`,
        cause: cause instanceof Error ? new Error(scrub(cause.message)) : undefined,
      });
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    throw await httpError(operation, request, response, scrub);
  }
}

interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  json?: unknown;
  body?: MultipartBody;
  accept?: string;
}

interface MultipartFile {
  fileName: string;
  type: string;
  size: number;
  body: () => AsyncIterable<Uint8Array>;
}

interface MultipartBody {
  contentType: string;
  /** The exact length of the body, sent as Content-Length: a part that yields more or fewer bytes aborts the request. */
  length: number;
  stream: () => Readable;
}

/**
 * A multipart/form-data body with one file part per entry under `field`, encoded as undici's FormData encodes
 * it, but read from each part's own source as it is sent (a FormData takes only Blobs, and no Blob reads from an
 * open descriptor). Each part must yield exactly its `size` bytes.
 */
function multipart(field: string, files: readonly MultipartFile[]): MultipartBody {
  const boundary = `----esign-${randomUUID()}`;
  const encoder = new TextEncoder();
  const escape = (text: string) => text.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
  const heads = files.map((f) =>
    encoder.encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="${escape(field)}"; filename="${escape(f.fileName)}"\r\n` +
        `Content-Type: ${f.type || 'application/octet-stream'}\r\n\r\n`,
    ),
  );
  const crlf = encoder.encode('\r\n');
  const tail = encoder.encode(`--${boundary}--\r\n`);
  const length = files.reduce((n, f, i) => n + heads[i]!.byteLength + f.size + crlf.byteLength, tail.byteLength);
  async function* encode(): AsyncGenerator<Uint8Array> {
    for (const [i, file] of files.entries()) {
      yield heads[i]!;
      let sent = 0;
      for await (const chunk of file.body()) {
        sent += chunk.byteLength;
        if (sent > file.size) break;
        yield chunk;
      }
      // Named by position only: a file name may hold a person's name.
      if (sent !== file.size) throw new Error(`files[${i}] is not the ${file.size} bytes announced`);
      yield crlf;
    }
    yield tail;
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, length, stream: () => Readable.from(encode(), { objectMode: false }) };
}

/** The classified error for a non-2xx answer; `scrub` removes the request's token from anything shown. */
async function httpError(
  operation: string,
  request: RequestSpec,
  response: Dispatcher.ResponseData,
  scrub: (text: string) => string,
): Promise<EsignApiError> {
  const text = await readLimited(response.body, MAX_ERROR_BODY);
  let problem: ProblemDetails | undefined;
  try {
    const parsed = ProblemDetails.safeParse(JSON.parse(text));
    if (parsed.success) problem = parsed.data;
  } catch {
    // Not JSON: keep the start of the text as the detail.
  }
  const summary = problem ? [problem.title, problem.detail].filter(Boolean).join(': ') : text.replace(/\s+/g, ' ').trim().slice(0, 300);
  const message = scrub(`${request.method} ${request.path} returned HTTP ${response.statusCode}${summary ? `: ${summary}` : ''}`);
  return new EsignApiError({
    kind: 'http',
    operation,
    status: response.statusCode,
    retryAfterMs: parseRetryAfter(response.headers['retry-after']),
    problem: problem ? (JSON.parse(scrub(JSON.stringify(problem))) as ProblemDetails) : undefined,
    message,
  });
}

function encodeId(id: string): string {
  if (id.length === 0) throw new EsignApiError({ kind: 'invalid_request', operation: 'request', message: 'id is empty' });
  // encodeURIComponent leaves dots alone: `..` would be a path segment that climbs out of /transactions/.
  if (id === '.' || id === '..') throw new EsignApiError({ kind: 'invalid_request', operation: 'request', message: 'id is a dot segment' });
  return encodeURIComponent(id);
}

function validateRequest<S extends z.ZodType>(operation: string, schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new EsignApiError({ kind: 'invalid_request', operation, message: `invalid request: ${describeIssues(parsed.error)}` });
  }
  return parsed.data;
}

/** Reads at most `limit` bytes of an error body; leaving the loop early destroys the rest. */
/** The whole body as text, or undefined (the body destroyed) as soon as it passes `limit` bytes. */
async function readBounded(body: Dispatcher.ResponseData['body'], limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      chunks.push(buf.subarray(0, limit - size));
      size += buf.length;
      if (size >= limit) break;
    }
  } catch {
    // A broken error body still leaves us the status code.
  }
  return Buffer.concat(chunks).toString('utf8');
}
