// `npm run build:workflows`: the prebuilt workflow bundle production workers load
// (ESIGN_WORKFLOW_BUNDLE=dist/workflow-bundle.js), so they start without webpack. It runs compiled
// (dist/scripts/bundle-workflows.js, after `npm run build`), and so bundles the compiled workflows (dist/workflows/),
// as the image is built.
import { mkdir, writeFile } from 'node:fs/promises';
import { bundleWorkflows } from '../src/worker/create-worker.js';

const code = await bundleWorkflows();
await mkdir('dist', { recursive: true });
await writeFile('dist/workflow-bundle.js', code);
process.stdout.write(`wrote dist/workflow-bundle.js (${Math.round(code.length / 1024)} KiB)\n`);
