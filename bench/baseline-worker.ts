// The worker of baseline T, in its own process like the real worker.
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { noopActivities } from './baseline-activities.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  taskQueue: process.env.ESIGN_TASK_QUEUE!,
  // The run's bundle of them when given (bench/setup.ts), else bundled now.
  ...(process.env.BENCH_BASELINE_BUNDLE
    ? { workflowBundle: { codePath: process.env.BENCH_BASELINE_BUNDLE } }
    : { workflowsPath: fileURLToPath(new URL('./baseline-workflows.ts', import.meta.url)) }),
  activities: noopActivities,
});
process.stdout.write('worker polling\n');
await worker.run();
await connection.close();
