import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../../src/failures.js';
import { AllowList, urlRefusal } from '../../src/http/outbound.js';

/**
 * Outbound URL allow-list for document sources and callbacks. An entry is an
 * origin (`https://docs.example.com`) or a host (`docs.example.com`, any port
 * and scheme): src/http/outbound.ts's AllowList, which the worker's guarded
 * dispatcher holds every request to as well (with the addresses a name may
 * resolve to). Redirects are never followed (undici's request does not), so a
 * redirect to another host is refused with the 3xx itself.
 */
export class UrlPolicy {
  readonly #allow: AllowList;

  constructor(allowed: readonly string[]) {
    this.#allow = new AllowList(allowed);
  }

  check(raw: string, what: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw ApplicationFailure.nonRetryable(`${what} is not a URL`, FailureType.UrlNotAllowed);
    }
    if (urlRefusal(url, this.#allow)) {
      throw ApplicationFailure.nonRetryable(
        `${what} ${url.origin} is not on the allow-list: add it to the workers' ESIGN_ALLOWED_URLS (under npm run dev, set it as the stack starts)`,
        FailureType.UrlNotAllowed,
      );
    }
    return url;
  }
}
