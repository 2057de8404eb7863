// Builds the package from the one source, src/client/index.ts and what it imports (./tsconfig.json), into dist/:
// JavaScript and declarations, from an empty dist/, so that nothing removed from the sources lingers in a tarball.
// Run by `npm run build:client` at the root, and by `npm pack` and `npm publish` here (prepack).
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
rmSync(join(here, 'dist'), { recursive: true, force: true });
// The repository's TypeScript: the package itself has no dependency on it.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', here], { stdio: 'inherit' });
