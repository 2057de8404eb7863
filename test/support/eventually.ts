/**
 * The tests' one polling helper: waits for a positive marker (a delivery
 * record, a workflow's state, an event received) instead of sleeping for a
 * fixed time. Polls `probe` until it returns something other than
 * `undefined` or `false`, and returns that.
 *
 * A probe that throws counts as "not yet" (a workflow not started yet, a
 * server still coming up); the last error is named if time runs out, so a
 * timeout says what was awaited and what stood in the way.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why =
        lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
