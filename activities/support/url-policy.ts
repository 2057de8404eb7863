import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../../src/failures.js';

/**
 * Outbound URL allow-list for document sources and callbacks. An entry is an
 * origin (`https://docs.example.com`) or a host (`docs.example.com`, any port
 * and scheme). Redirects are never followed (undici's request does not), so a
 * redirect to another host is refused with the 3xx itself.
 */
export class UrlPolicy {
  readonly #origins: Set<string>;
  readonly #hosts: Set<string>;

  constructor(allowed: readonly string[]) {
    this.#origins = new Set();
    this.#hosts = new Set();
    for (const entry of allowed) {
      if (/^https?:\/\//i.test(entry)) this.#origins.add(new URL(entry).origin);
      else if (entry) this.#hosts.add(entry.toLowerCase());
    }
  }

  check(raw: string, what: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw ApplicationFailure.nonRetryable(`${what} is not a URL`, FailureType.UrlNotAllowed);
    }
    const allowed =
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      !url.username &&
      !url.password &&
      (this.#origins.has(url.origin) || this.#hosts.has(url.hostname.toLowerCase()));
    if (!allowed) {
      throw ApplicationFailure.nonRetryable(`${what} ${url.origin} is not on the allow-list`, FailureType.UrlNotAllowed);
    }
    return url;
  }
}
