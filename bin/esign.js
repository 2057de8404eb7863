#!/usr/bin/env node
// The `esign` CLI. The project runs its TypeScript through tsx, in development and in production alike.
// First, before anything that an older Node cannot load: one line saying which Node, and how to get it.
import '../scripts/preflight.cjs';
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
