/**
 * A gate an activity waits at until the test opens it: the activity calls
 * `arrive()` then awaits `wait`; the test awaits `reached`, acts in that
 * window, then calls `open()`. Gates passed to `releaseOnTeardown` are opened
 * when the test ends, so a failed test never leaves a worker hanging.
 */
export interface Gate {
  wait: Promise<void>;
  open: () => void;
  reached: Promise<void>;
  arrive: () => void;
}

export function gate(releaseOnTeardown?: (() => void)[]): Gate {
  let open!: () => void;
  let arrive!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (arrive = r));
  releaseOnTeardown?.push(open);
  return { wait, open, reached, arrive };
}
