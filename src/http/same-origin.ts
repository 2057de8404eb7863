/**
 * Services on loopback refuse requests from other origins (issue 38, item 3). A browser on the same machine
 * can reach them. An attacker's page has two ways in, and each has a fastify `onRequest` hook here:
 *
 * - DNS rebinding: the page's own name, rebind.attacker.example, is pointed at 127.0.0.1, so its scripts
 *   read the service as same-origin. They still send `Host: rebind.attacker.example`. `refuseOtherHosts`
 *   answers 403 unless Host names the service as it is reached. A service bound to loopback is reached as
 *   localhost, 127.0.0.1 or [::1] (or the address it is bound to) at its port, or at the configured URLs it
 *   is published at. A service bound beyond loopback is reached by whatever names its network gives it
 *   (a compose service name, a LAN address), so any Host is accepted there.
 * - Cross-site requests (CSRF): browsers send a form, text or empty POST to any site without asking it
 *   first (no CORS preflight). They never add an Authorization header or a JSON content type without
 *   asking. `refuseCrossSiteWrites` checks every method but GET, HEAD and OPTIONS. It answers 403 when the
 *   browser says the request comes from another page: `Sec-Fetch-Site` other than `same-origin` or `none`,
 *   or an `Origin` that is not the service's own (`Origin: null`, an opaque origin, included). The hook
 *   answers 415 unless the request has a JSON body (or another type the service names) or a bearer token.
 *   Programs (curl, the worker, tests) send no Origin and no Sec-Fetch-Site and keep working as long as
 *   they send JSON (`{}` when there is nothing to say) or a token.
 */
import type { Server } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from './problem.js';

/** How a service is reached, which is what its requests' Host and Origin are checked against. */
export interface Reach {
  scheme: 'http' | 'https';
  /** The Host values it answers to, written as `URL#host` writes them; undefined means any (bound beyond loopback). */
  hosts: ReadonlySet<string> | undefined;
  /** Origins, besides its own (`scheme://Host`), whose pages may write to it: those of its configured URLs. */
  origins: ReadonlySet<string>;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * How a service listening on `server` is reached, read at each request: the port is known only once the
 * service listens, and a configured URL may be known only then. `urls` are the URLs it is also published at,
 * for example a configured public URL behind a proxy that keeps Host.
 */
export function reachOf(server: Server, options: { https: boolean; urls?: () => readonly (string | undefined)[] }): () => Reach {
  const scheme = options.https ? 'https' : 'http';
  return () => {
    const configured = (options.urls?.() ?? []).flatMap((u) => (u ? (parseUrl(u) ?? []) : []));
    const origins = new Set(configured.map((u) => u.origin));
    const address = server.address();
    if (!address || typeof address === 'string' || !isLoopback(address.address)) return { scheme, hosts: undefined, origins };
    const bound = address.address.includes(':') ? `[${address.address}]` : address.address;
    const hosts = new Set<string>();
    for (const name of [...LOOPBACK_NAMES, bound]) {
      const host = hostOf(scheme, `${name}:${address.port}`);
      if (host) hosts.add(host);
      // OpenSSL's HTTP client (`openssl ocsp -url`) sends the name without its port. A loopback name is never a
      // rebound one, whatever the port says, so it is accepted bare too.
      const bare = hostOf(scheme, name);
      if (bare) hosts.add(bare);
    }
    for (const u of configured) hosts.add(u.host);
    return { scheme, hosts, origins };
  };
}

/** DNS rebinding: 403 unless the request's Host names the service as it is reached. */
export function refuseOtherHosts(reach: () => Reach) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const { scheme, hosts } = reach();
    if (!hosts) return undefined;
    const given = rawHost(request);
    const host = given === undefined ? undefined : hostOf(scheme, given);
    if (host !== undefined && hosts.has(host)) return undefined;
    return sendProblem(
      reply,
      403,
      `this service answers only to ${[...hosts].join(', ')}, not to Host ${given === undefined ? '(none)' : JSON.stringify(given.slice(0, 100))}`,
    );
  };
}

/**
 * CSRF: a write (any method but GET, HEAD, OPTIONS) is refused with 403 when a browser says another site sent
 * it, and with 415 unless its content type is one of `bodyTypes` (default JSON) or it has a bearer token.
 */
export function refuseCrossSiteWrites(reach: () => Reach, options: { bodyTypes?: readonly string[] } = {}) {
  const bodyTypes = options.bodyTypes ?? ['application/json'];
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (SAFE_METHODS.has(request.method)) return undefined;
    const crossSite = crossSiteReason(request, reach());
    if (crossSite) return sendProblem(reply, 403, `${crossSite}: this service takes writes only from its own pages and from programs`);
    if (hasBearer(request) || bodyTypes.includes(mediaType(request))) return undefined;
    return sendProblem(
      reply,
      415,
      `a ${request.method} needs Content-Type ${bodyTypes.join(' or ')} (send {} when there is nothing to say) or a bearer token: browsers send form, text and empty requests from any site`,
    );
  };
}

/** Why a browser's request is from another origin, or undefined when it is not, or not from a browser. */
function crossSiteReason(request: FastifyRequest, reach: Reach): string | undefined {
  const site = header(request, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `a ${site} request (Sec-Fetch-Site)`;
  const origin = header(request, 'origin');
  if (origin === undefined) return undefined;
  const given = parseUrl(origin)?.origin;
  const host = rawHost(request);
  const own = host === undefined ? undefined : hostOf(reach.scheme, host);
  if (given !== undefined && ((own !== undefined && given === `${reach.scheme}://${own}`) || reach.origins.has(given))) return undefined;
  return `a request from another origin (Origin: ${JSON.stringify(origin.slice(0, 100))})`;
}

function isLoopback(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\./i.test(address);
}

function rawHost(request: FastifyRequest): string | undefined {
  const host = request.headers.host ?? request.headers[':authority'];
  return typeof host === 'string' && host !== '' ? host : undefined;
}

/** A Host value as `URL#host` writes it (lower case, no default port), or undefined when it is not just a host. */
function hostOf(scheme: string, host: string): string | undefined {
  const url = parseUrl(`${scheme}://${host}`);
  if (!url || url.username || url.password || url.pathname !== '/' || url.search || url.hash) return undefined;
  return url.host;
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value.trim().toLowerCase() : undefined;
}

function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

function hasBearer(request: FastifyRequest): boolean {
  return /^Bearer\s+\S/i.test(request.headers.authorization ?? '');
}
