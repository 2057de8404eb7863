/**
 * A token bucket per client address for the webhook route.
 *
 * Why not @fastify/rate-limit: it is not among the project's dependencies, and
 * what the bridge needs is small: one route, one process-local budget per
 * address (replicas each keep their own: a per-replica limit is what protects
 * each replica's provider lookups and Temporal signals), a surcharge for
 * failed authentication, and memory that stays bounded under a flood from
 * many addresses. ~60 lines do that without a dependency to keep current.
 */
import { isIPv6 } from 'node:net';

export interface RateLimitOptions {
  /** Tokens added per second (the sustained request rate per address). 0 turns the limit off. */
  perSecond: number;
  /** Largest number of tokens an address can hold (the burst). */
  burst: number;
  /** How many addresses are remembered; the least recently seen are forgotten first. */
  capacity?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * The key of a client: its IPv4 address, or its IPv6 /64 (one host usually
 * owns a whole /64, so per-address keys would let it take 2^64 buckets).
 */
export function clientKey(ip: string): string {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4mapped) return v4mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, '').toLowerCase())
    .join(':')}::/64`;
}

export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #capacity: number;

  constructor(
    readonly options: RateLimitOptions,
    readonly now: () => number = () => performance.now(),
  ) {
    this.#capacity = options.capacity ?? 50_000;
  }

  get enabled(): boolean {
    return this.options.perSecond > 0;
  }

  #bucket(key: string): Bucket {
    const t = this.now();
    const found = this.#buckets.get(key);
    let bucket: Bucket;
    if (found) {
      this.#buckets.delete(key); // re-inserted below: the map's order is least recently seen first
      bucket = { tokens: Math.min(this.options.burst, found.tokens + ((t - found.at) / 1000) * this.options.perSecond), at: t };
    } else bucket = { tokens: this.options.burst, at: t };
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > this.#capacity) this.#buckets.delete(this.#buckets.keys().next().value!);
    return bucket;
  }

  /** Takes `cost` tokens from the address's bucket: null when allowed, else the seconds to wait before it would be. */
  take(ip: string, cost = 1): number | null {
    if (!this.enabled) return null;
    const bucket = this.#bucket(clientKey(ip));
    if (bucket.tokens >= cost) {
      bucket.tokens -= cost;
      return null;
    }
    return Math.max(1, Math.ceil((cost - bucket.tokens) / this.options.perSecond));
  }

  /** Takes more from an address after the fact (a failed authentication costs more than a request). */
  charge(ip: string, cost: number): void {
    if (!this.enabled) return;
    const bucket = this.#bucket(clientKey(ip));
    bucket.tokens = Math.max(-this.options.burst, bucket.tokens - cost);
  }
}
