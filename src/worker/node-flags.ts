/**
 * The Node flags the worker runs with, wherever it starts: the Dockerfile's command, `npm run worker` and the
 * tools' launcher (cluster, chaos, benchmarks) pass these, and `npm run bench` too, as it runs the archive
 * activity in its own process; test/operations/worker-node-flags.test.ts holds them together.
 *
 * On a machine with several GiB, V8 sizes each isolate's young generation at 64 MiB semi-spaces, and the worker
 * has two isolates (the main thread and the workflow thread), so about 250 MiB of its resident memory was nursery;
 * and it lets the old generation grow up to four times its live size between collections, which a worker holding
 * hundreds of cached workflows pays in hundreds of MiB. With 16 MiB semi-spaces and growth capped at 1.5 times,
 * 1,000 waiting transactions took 455 MiB instead of 852, with the same burst rate and no more CPU per transaction
 * end to end (`BENCH_WAITING_N=1000 npm run bench -- waiting`, and with `BENCH_WORKER_NODE_FLAGS=none` for the
 * comparison; docs/benchmarks.md).
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--heap-growing-percent=50'];
