#!/usr/bin/env node
// The `esign` CLI. The project runs its TypeScript through tsx, in development and in production alike.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
