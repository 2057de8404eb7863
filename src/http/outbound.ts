import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, getGlobalDispatcher, request, setGlobalDispatcher, type Dispatcher } from 'undici';

/**
 * The one policy for requests the worker and the sandbox make to URLs that are not their provider or Temporal:
 * document sources, callbacks, webhooks, time-stamping and revocation services, and whatever a library fetches on
 * its own (@libpdf/core walks the Authority Information Access URLs of every certificate in a PDF it is handed).
 * A URL a caller or a caller's certificate names must not reach the machine's own services, the private network or
 * a cloud's metadata endpoint (issue 38), so:
 *
 * - scheme http or https, no userinfo, the origin (or the host) on an allow-list;
 * - the address connected to is the address checked: the DNS answer is judged inside the connection's own lookup,
 *   so a name cannot resolve to a public address for the check and to 127.0.0.1 for the connection (rebinding);
 * - loopback, private, link-local, unique-local, shared (CGNAT), multicast, unspecified and reserved addresses
 *   (and their IPv4-mapped, NAT64 and 6to4 forms) only for hosts explicitly allowed to be internal;
 * - redirects never followed; bodies bounded while they stream and a total deadline (`fetchBounded`).
 */

// ---------------------------------------------------------------------------------------------------------------
// Errors

export type OutboundReason =
  'invalid-url' | 'scheme' | 'userinfo' | 'not-allowed' | 'internal-address' | 'redirect' | 'too-large' | 'timeout' | 'network';

/** A request refused by the policy or failed within its bounds. The message names the host, never a path or query. */
export class OutboundError extends Error {
  override readonly name = 'OutboundError';
  /** undici passes a lookup error through as it is; a code lets callers that only look at `code` tell it apart. */
  readonly code = 'E_OUTBOUND';
  constructor(
    readonly reason: OutboundReason,
    /** The host (with its port when it has one), when the URL had one. */
    readonly host: string | undefined,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The policy's refusal behind `err` (undici hands a lookup's error back as it is, or as a cause), when the request
 * was refused for where it goes rather than failed on the way: asking again cannot help, so callers fail for good.
 */
export function policyRefusal(err: unknown): OutboundError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof OutboundError && ['invalid-url', 'scheme', 'userinfo', 'not-allowed', 'internal-address'].includes(e.reason)) return e;
  }
  return undefined;
}

/** How a URL is named in messages: its origin, without path, query or userinfo (which can carry secrets). */
function where(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Addresses

/**
 * Why `address` (an IP literal, with or without brackets or a zone) is not a public unicast address, or undefined
 * when it is one. What is not a literal is undefined too: names are judged by what they resolve to.
 */
export function internalAddressKind(address: string): string | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return ipv4Kind(bare.split('.').map(Number));
  if (family === 6) {
    const bytes = ipv6Bytes(bare);
    return bytes ? ipv6Kind(bytes) : 'unreadable';
  }
  return undefined;
}

function ipv4Kind([a = 0, b = 0, c = 0]: number[]): string | undefined {
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && (b & 0xf0) === 16) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && (b & 0xc0) === 64) return 'shared (CGNAT)';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  // IETF protocol assignments, documentation, benchmarking: nothing a document or a CA lives on.
  if ((a === 192 && b === 0 && (c === 0 || c === 2)) || (a === 198 && (b & 0xfe) === 18) || (a === 198 && b === 51 && c === 100)) {
    return 'reserved';
  }
  if (a === 203 && b === 0 && c === 113) return 'reserved';
  return undefined;
}

function ipv6Kind(b: number[]): string | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const zeroUpTo = (n: number) => zero(0, n);
  const v4 = (from: number) => b.slice(from, from + 4);
  const embedded = (form: string, from: number) => {
    const kind = ipv4Kind(v4(from));
    return kind ? `${kind} (${form} ${v4(from).join('.')})` : undefined;
  };
  if (zeroUpTo(16)) return 'unspecified';
  if (zeroUpTo(15) && b[15] === 1) return 'loopback';
  // ::ffff:a.b.c.d reaches a.b.c.d itself.
  if (zeroUpTo(10) && b[10] === 0xff && b[11] === 0xff) return embedded('IPv4-mapped', 12);
  // ::a.b.c.d (IPv4-compatible, deprecated): nothing legitimate uses it.
  if (zeroUpTo(12)) return 'reserved';
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they carry.
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return embedded('NAT64', 12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return 'reserved';
  if (b[0] === 0x20 && b[1] === 0x02) return embedded('6to4', 2);
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private (site-local)';
  if ((b[0]! & 0xfe) === 0xfc) return 'unique-local';
  if (b[0] === 0xff) return 'multicast';
  // Discard-only (100::/64), Teredo (2001::/32), documentation (2001:db8::/32).
  if (b[0] === 0x01 && zero(1, 8)) return 'reserved';
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x00 && b[3] === 0x00) return 'reserved';
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return 'reserved';
  return undefined;
}

/** The 16 bytes of an IPv6 address (already known to be one: `isIP` said 6). */
function ipv6Bytes(text: string): number[] | undefined {
  let s = text.toLowerCase();
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    tail.push(...dotted[1]!.split('.').map(Number));
    s = `${s.slice(0, dotted.index)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const words = [...head, ...new Array<number>(missing).fill(0), ...rest];
  const bytes = words.flatMap((w) => [(w >> 8) & 0xff, w & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes.length === 16 && bytes.every((x) => Number.isInteger(x)) ? bytes : undefined;
}

/** RFC 6761: `localhost` and every name under it are the machine itself. */
function isLocalhostName(host: string): boolean {
  const h = host.replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

// ---------------------------------------------------------------------------------------------------------------
// The allow-list and the policy

/**
 * An allow-list of origins (`https://docs.example.com`, `http://127.0.0.1:4040`: that scheme, host and port) and
 * bare hosts (`docs.example.com`: any port and scheme), as ESIGN_ALLOWED_URLS has them.
 */
export class AllowList {
  readonly #origins = new Set<string>();
  readonly #hosts = new Set<string>();
  /** Every host some entry names, with or without a scheme. */
  readonly #named = new Set<string>();

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      if (/^https?:\/\//i.test(entry)) {
        const url = new URL(entry);
        this.#origins.add(url.origin);
        this.#named.add(url.hostname);
      } else if (entry) {
        this.#hosts.add(entry.toLowerCase());
        this.#named.add(entry.toLowerCase());
      }
    }
  }

  admits(url: URL): boolean {
    return this.#origins.has(url.origin) || this.#hosts.has(url.hostname.toLowerCase());
  }

  /** Whether some entry names `hostname` (as URL.hostname writes it: IPv6 in brackets). */
  names(hostname: string): boolean {
    return this.#named.has(hostname.toLowerCase());
  }
}

/** Why `url` may not be requested under `allow` (scheme, userinfo, not on the list); undefined when it may. */
export function urlRefusal(url: URL, allow: AllowList): Extract<OutboundReason, 'scheme' | 'userinfo' | 'not-allowed'> | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'scheme';
  if (url.username || url.password) return 'userinfo';
  return allow.admits(url) ? undefined : 'not-allowed';
}

export interface OutboundRules {
  /** Origins or bare hosts that may be requested (AllowList's form). */
  allow: readonly string[];
  /**
   * Hosts (or origins: their host is taken) that may resolve to, or be, internal addresses. Besides these, an
   * allowed entry that is itself an IP literal or `localhost` is explicit enough: whoever wrote `http://127.0.0.1:4040`
   * meant the machine itself. A name such as `docs.example.com` resolving to 10.0.0.5 is refused unless listed here.
   */
  internal?: readonly string[];
}

interface CompiledRules {
  source: OutboundRules;
  allow: AllowList;
  internal: Set<string>;
}

function compile(rules: OutboundRules): CompiledRules {
  const internal = new Set<string>();
  for (const entry of rules.internal ?? []) {
    if (/^https?:\/\//i.test(entry)) internal.add(new URL(entry).hostname);
    else if (entry) internal.add(entry.toLowerCase());
  }
  return { source: rules, allow: new AllowList(rules.allow), internal };
}

/** The rules, fixed or read at each request (the sandbox's webhook URLs change while it runs). */
export class OutboundPolicy {
  readonly #rules: () => OutboundRules;
  #compiled: CompiledRules | undefined;

  constructor(rules: OutboundRules | (() => OutboundRules)) {
    this.#rules = typeof rules === 'function' ? rules : () => rules;
  }

  #current(): CompiledRules {
    const rules = this.#rules();
    if (this.#compiled?.source !== rules) this.#compiled = compile(rules);
    return this.#compiled;
  }

  /** The URL, parsed, when it may be requested; an OutboundError otherwise (an IP literal's address judged too). */
  check(raw: string | URL): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('invalid-url', undefined, 'an outbound request was refused: not a URL');
    }
    const rules = this.#current();
    const refusal = urlRefusal(url, rules.allow);
    if (refusal) {
      const why = {
        scheme: `its scheme ${url.protocol} is neither http nor https`,
        userinfo: 'it carries a user name or password',
        'not-allowed': 'it is not on the allow-list',
      }[refusal];
      throw new OutboundError(refusal, url.host, `a request to ${where(url)} was refused: ${why}`);
    }
    if (isIP(url.hostname.replace(/^\[(.*)\]$/, '$1'))) this.checkAddress(url.hostname, url.hostname);
    return url;
  }

  /** Throws when `hostname` may not connect to `address` (an internal address, and the host not allowed to be internal). */
  checkAddress(hostname: string, address: string): void {
    const kind = internalAddressKind(address);
    if (kind === undefined || this.permitsInternal(hostname)) return;
    const named = hostname === address ? address : `${hostname} (${address})`;
    throw new OutboundError(
      'internal-address',
      hostname,
      `a request to ${named} was refused: a ${kind} address, and the host is not allowed to be internal`,
    );
  }

  permitsInternal(hostname: string): boolean {
    const rules = this.#current();
    const host = hostname.toLowerCase();
    if (rules.internal.has(host)) return true;
    const literal = isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0;
    return rules.allow.names(host) && (literal || isLocalhostName(host));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The dispatcher

/** A resolver: every address of a name (dns.lookup with `all`). Tests answer with addresses of their own. */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, order: 'verbatim' });

/**
 * The connection's own lookup: the name resolved, every address judged, and the connection made to exactly those
 * (Node connects to what its lookup answers), so nothing resolves again between the check and the connect.
 */
function pinnedLookup(policy: OutboundPolicy, resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const addresses = options.family ? found.filter((a) => a.family === options.family) : found;
        try {
          if (addresses.length === 0) throw new OutboundError('network', hostname, `${hostname} has no address to connect to`);
          for (const a of addresses) policy.checkAddress(hostname, a.address);
        } catch (err) {
          callback(err as NodeJS.ErrnoException, '', 0);
          return;
        }
        if (options.all) (callback as unknown as (err: null, all: typeof addresses) => void)(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/**
 * Hands a response on with its Location header removed when it is a redirect: undici's `request` never follows one
 * and its callers see the 3xx as it is (a document source that redirects is refused for that); `fetch`, which
 * follows by default, finds nothing to follow and returns the 3xx too (the Fetch standard's "location is null").
 */
class NoRedirectHandler implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;

  constructor(inner: Dispatcher.DispatchHandler) {
    this.#inner = inner;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.#inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    if (statusCode >= 300 && statusCode < 400) {
      const raw = (controller as { rawHeaders?: unknown }).rawHeaders;
      if (Array.isArray(raw)) (controller as { rawHeaders?: unknown }).rawHeaders = withoutLocation(raw as (Buffer | string)[]);
      if (headers && 'location' in headers) {
        headers = { ...headers };
        delete headers.location;
      }
    }
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void {
    this.#inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.#inner.onResponseError?.(controller, error);
  }

  // Callbacks some handlers (the legacy wrapper Node's own fetch goes through) also take.
  onBodySent(chunk: unknown): void {
    (this.#inner as { onBodySent?: (c: unknown) => void }).onBodySent?.(chunk);
  }

  onRequestSent(): void {
    (this.#inner as { onRequestSent?: () => void }).onRequestSent?.();
  }

  onResponseStarted(): void {
    (this.#inner as { onResponseStarted?: () => void }).onResponseStarted?.();
  }
}

function withoutLocation(raw: (Buffer | string)[]): (Buffer | string)[] {
  const kept: (Buffer | string)[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (String(raw[i]).toLowerCase() === 'location') continue;
    kept.push(raw[i]!, raw[i + 1]!);
  }
  return kept;
}

export interface OutboundDispatcherOptions {
  resolve?: Resolver;
  connectTimeoutMs?: number;
}

/**
 * A dispatcher that holds every request to `policy`: the origin checked when the request is dispatched (an IP
 * literal's address too), a name's addresses when its connection resolves it, redirects not followed.
 */
export function outboundDispatcher(policy: OutboundPolicy, options: OutboundDispatcherOptions = {}): Dispatcher {
  const agent = new Agent({
    connect: { lookup: pinnedLookup(policy, options.resolve ?? systemResolver), timeout: options.connectTimeoutMs ?? 10_000 },
  });
  return agent.compose(
    (dispatch) =>
      function guarded(opts, handler) {
        try {
          if (!opts.origin) throw new OutboundError('invalid-url', undefined, 'an outbound request without an origin was refused');
          policy.check(new URL(String(opts.origin)));
        } catch (err) {
          if (typeof handler.onResponseError !== 'function') throw err;
          handler.onResponseError(null as unknown as Dispatcher.DispatchController, err as Error);
          return false;
        }
        return dispatch(opts, new NoRedirectHandler(handler));
      },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The process's global dispatcher

/** What this process may reach, from each part of it that registered (the worker's allow-list, the sandbox's webhooks). */
const permits = new Set<() => OutboundRules>();

/** The union of every registered permit, read at each request. */
const processPolicy = new OutboundPolicy(() => {
  const rules = [...permits].map((p) => p());
  return { allow: rules.flatMap((r) => r.allow), internal: rules.flatMap((r) => r.internal ?? []) };
});

/**
 * Lets this process reach what `rules` allows once the guard is installed (and does nothing before). Returns the
 * function that withdraws it.
 */
export function permitOutbound(rules: OutboundRules | (() => OutboundRules)): () => void {
  const read = typeof rules === 'function' ? rules : () => rules;
  permits.add(read);
  return () => {
    permits.delete(read);
  };
}

let installed: { dispatcher: Dispatcher; previous: Dispatcher } | undefined;

/**
 * Makes the guarded dispatcher this process's global one: undici's `request` and `fetch` use it, and so does
 * Node's built-in `globalThis.fetch` (it reads the dispatcher undici's setGlobalDispatcher sets), which is what
 * libraries fetch with on their own. Only what `permitOutbound` registered is reachable from then on. Idempotent.
 */
export function installOutboundGuard(options: OutboundDispatcherOptions = {}): Dispatcher {
  if (!installed) {
    installed = { dispatcher: outboundDispatcher(processPolicy, options), previous: getGlobalDispatcher() };
    setGlobalDispatcher(installed.dispatcher);
  }
  return installed.dispatcher;
}

/** Puts back the dispatcher the guard replaced (tests). */
export async function uninstallOutboundGuard(): Promise<void> {
  if (!installed) return;
  const { dispatcher, previous } = installed;
  installed = undefined;
  setGlobalDispatcher(previous);
  await dispatcher.close();
}

// ---------------------------------------------------------------------------------------------------------------
// Bounded requests

export interface BoundedRequest {
  method?: 'GET' | 'POST';
  body?: Uint8Array | string;
  headers?: Record<string, string>;
  /** The most bytes the answer may have: a longer one is cut off as it streams, never held past this. */
  maxBytes: number;
  /** From the start of the request to the last byte of the answer. */
  timeoutMs: number;
  /** The policy the URL is held to; default: the process's global dispatcher (the guard, once installed). */
  policy?: OutboundPolicy;
  signal?: AbortSignal;
}

export interface BoundedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Without a policy of its own, a request still goes over http(s) only and carries no credentials in its URL. */
function basicCheck(raw: string | URL): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError('invalid-url', undefined, 'an outbound request was refused: not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundError('scheme', url.host, `a request to ${where(url)} was refused: its scheme is neither http nor https`);
  }
  if (url.username || url.password) {
    throw new OutboundError('userinfo', url.host, `a request to ${where(url)} was refused: it carries a user name or password`);
  }
  return url;
}

const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

const dispatchers = new WeakMap<OutboundPolicy, Dispatcher>();

/** One dispatcher per policy, so connections are kept alive between requests under it. */
export function dispatcherFor(policy: OutboundPolicy): Dispatcher {
  let d = dispatchers.get(policy);
  if (!d) {
    d = outboundDispatcher(policy);
    dispatchers.set(policy, d);
  }
  return d;
}

/**
 * One request, held to the policy, with no redirect followed (a 3xx is an OutboundError), its answer read while it
 * streams up to `maxBytes` (more aborts it) and all of it within `timeoutMs`. Any other status is returned.
 */
export async function fetchBounded(raw: string | URL, init: BoundedRequest): Promise<BoundedResponse> {
  const url = init.policy ? init.policy.check(raw) : basicCheck(raw);
  const host = url.host;
  const deadline = AbortSignal.timeout(init.timeoutMs);
  const signal = init.signal ? AbortSignal.any([deadline, init.signal]) : deadline;
  const failed = (err: unknown): OutboundError => {
    if (err instanceof OutboundError) return err;
    const code = (err as { code?: string }).code;
    // undici's own header, body and connect timeouts are set to the same deadline and may fire a moment before it.
    if (deadline.aborted || (code && UNDICI_TIMEOUTS.has(code))) {
      return new OutboundError('timeout', host, `a request to ${where(url)} did not complete within ${init.timeoutMs} ms`, { cause: err });
    }
    return new OutboundError('network', host, `a request to ${where(url)} failed: ${code ?? (err as Error).message}`, { cause: err });
  };
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, {
      method: init.method ?? 'GET',
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.headers ? { headers: init.headers } : {}),
      ...(init.policy ? { dispatcher: dispatcherFor(init.policy) } : {}),
      signal,
      headersTimeout: init.timeoutMs,
      bodyTimeout: init.timeoutMs,
    });
  } catch (err) {
    throw failed(err);
  }
  if (res.statusCode >= 300 && res.statusCode < 400) {
    discard(res.body);
    throw new OutboundError('redirect', host, `${where(url)} answered a redirect (${res.statusCode}), which is not followed`);
  }
  const tooLarge = () => new OutboundError('too-large', host, `${where(url)} answered more than ${init.maxBytes} bytes`);
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > init.maxBytes) {
    discard(res.body);
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body) {
      const bytes = chunk as Buffer;
      total += bytes.length;
      // Leaving the loop destroys the stream: the connection is dropped, nothing more is read.
      if (total > init.maxBytes) throw tooLarge();
      chunks.push(bytes);
    }
  } catch (err) {
    discard(res.body);
    throw failed(err);
  }
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks, total) };
}

/** Drops an answer's body and its connection; the abort that follows is expected, not an error of anyone's. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/**
 * A `fetch` for libraries that take one (@libpdf/core's HttpTimestampAuthority), made of fetchBounded: the same
 * policy, no redirects, the answer bounded while it streams, a total deadline.
 */
export function boundedFetch(bounds: { maxBytes: number; timeoutMs: number; policy?: OutboundPolicy }): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'POST') throw new TypeError(`boundedFetch does not send ${method}`);
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new TypeError('boundedFetch sends a string or bytes');
    }
    const answer = await fetchBounded(url, {
      method,
      ...(body === undefined || body === null ? {} : { body }),
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      maxBytes: bounds.maxBytes,
      timeoutMs: bounds.timeoutMs,
      ...(bounds.policy ? { policy: bounds.policy } : {}),
      ...(init?.signal ? { signal: init.signal } : {}),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
    }
    const bodyless = answer.status === 204 || answer.status === 304;
    return new Response(bodyless ? null : new Uint8Array(answer.body), { status: answer.status, headers });
  };
}

/**
 * Starts `start` with `globalThis.fetch` refusing every request, and puts the real one back before anything else
 * runs. For libraries that take the fetch they will use from `globalThis` when they are constructed and give no
 * way to pass one: @libpdf/core's `addArchivalData` builds its LtvDataGatherer (and, through it, the AIA
 * certificate-chain walk) synchronously, before its first await, so the walk gets this fetch and no certificate in
 * the document, the caller's included, makes the process request anything. Nothing else can run between the swap
 * and the restore: both happen in this one synchronous call.
 */
export function withGlobalFetchRefused<T>(start: () => Promise<T>): Promise<T> {
  const real = globalThis.fetch;
  const refuse: typeof fetch = async (input) => {
    const url = input instanceof Request ? input.url : String(input);
    let host: string | undefined;
    try {
      host = new URL(url).host;
    } catch {
      host = undefined;
    }
    throw new OutboundError('not-allowed', host, `a request to ${host ?? 'an unreadable URL'} was refused: nothing is fetched here`);
  };
  globalThis.fetch = refuse;
  try {
    return start();
  } finally {
    globalThis.fetch = real;
  }
}
