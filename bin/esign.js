#!/usr/bin/env node
// The `esign` CLI. A checkout with its development dependencies runs the source through tsx, so the CLI is always
// today's code; an installation without them (the image, `npm ci --omit=dev`) runs the compiled JavaScript of
// `npm run build` (dist/src/cli/main.js), with no TypeScript compiler at run time
// (docs/decisions/compiled-javascript-in-production.md).
// First, before anything that an older Node cannot load: one line saying which Node, and how to get it.
import '../scripts/preflight.cjs';
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);

/** tsx's loader, when this is a checkout with its development dependencies; undefined otherwise. */
async function tsx() {
  if (!existsSync(source)) return undefined;
  try {
    return await import('tsx/esm/api');
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw err;
  }
}

const loader = await tsx();
if (loader) {
  loader.register();
  await import(source.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write('esign: no compiled CLI (dist/src/cli/main.js) and no tsx to run the source: run `npm run build`\n');
  process.exit(1);
}
