/**
 * The transaction's search attributes, set where its state changes and sent as
 * one upsert per burst of work: a workflow task that records the provider's ids
 * and moves the phase writes one history event and one visibility record, not
 * two. The upsert goes out once the synchronous work that set them is done
 * (a microtask, still within the workflow task), so its place among the task's
 * commands is the same on every replay.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';

export class SearchAttributes {
  #pending: SearchAttributeUpdatePair[] | undefined;

  set(pairs: SearchAttributeUpdatePair[]): void {
    if (!this.#pending) {
      this.#pending = [];
      void Promise.resolve().then(() => this.flush());
    }
    for (const pair of pairs) {
      const at = this.#pending.findIndex((p) => p.key.name === pair.key.name);
      if (at >= 0) this.#pending[at] = pair;
      else this.#pending.push(pair);
    }
  }

  /** Sends what is pending now (before the workflow returns or continues as new). */
  flush(): void {
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending && pending.length > 0) upsertSearchAttributes(pending);
  }
}
