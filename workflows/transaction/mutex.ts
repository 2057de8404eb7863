/**
 * Runs async sections one at a time, in the order they asked (Temporal's
 * safe-message-handlers sample uses a mutex for the same purpose). Plain
 * promise chaining: deterministic in the workflow sandbox, and each section
 * starts one microtask after the previous one settles, whatever it returned.
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  #held = 0;

  /** `after` runs as each section settles, before anything waiting on it resumes. */
  constructor(private readonly after: () => void = () => undefined) {}

  run<T>(section: () => Promise<T>): Promise<T> {
    this.#held++;
    const result = this.#tail.then(section);
    const settled = () => {
      this.#held--;
      this.after();
    };
    this.#tail = result.then(settled, settled);
    return result;
  }

  /** Whether a section is running or waiting. */
  get busy(): boolean {
    return this.#held > 0;
  }
}
