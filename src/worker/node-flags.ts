/**
 * The Node flags the worker runs with, wherever it starts: the Dockerfile's command, `npm run worker` and the
 * tools' launcher (cluster, chaos, benchmarks) pass these; test/worker-node-flags.test.ts holds them together.
 *
 * On a machine with several GiB, V8 sizes each isolate's young generation at 64 MiB semi-spaces, and the worker
 * has two isolates (the main thread and the workflow thread), so about 250 MiB of its resident memory was nursery.
 * At 16 MiB, 1,000 waiting transactions took 602 MiB instead of 852 with the same CPU and burst rate
 * (`BENCH_WAITING_N=1000 npm run bench -- waiting`, docs/benchmarks.md).
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
