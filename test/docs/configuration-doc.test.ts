// docs/configuration.md against the code: every variable a process's schema reads is documented under that process
// (or under "Every process"), and every variable the page names is read by some code, so the reference can neither
// miss a setting nor keep one that no longer exists.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { BridgeEnv } from '../../src/bridge/config.js';
import { CodecEnv } from '../../src/codec/config.js';
import { ProviderEnv } from '../../src/esign/provider-env.js';
import { SandboxEnv } from '../../packages/sandbox/src/config.js';
import { WorkerEnv } from '../../src/worker/config.js';
import { projectRoot } from '../../tools/support/launch.js';

const doc = await readFile(join(projectRoot, 'docs/configuration.md'), 'utf8');

/** The variables in the first column of each section's table, by section title. */
function sections(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let current = '';
  for (const line of doc.split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) out.set((current = heading[1]!), new Set());
    else if (line.startsWith('| `') && current) {
      const first = line.split('|')[1]!;
      for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) out.get(current)!.add(m[1]!);
    }
  }
  return out;
}

const keys = (schema: z.ZodObject) => Object.keys(schema.shape);

describe('docs/configuration.md', () => {
  const bySection = sections();
  const documented = (section: string) => new Set([...(bySection.get(section) ?? []), ...(bySection.get('Every process') ?? [])]);

  it.each([
    ['Worker', WorkerEnv],
    ['Webhook bridge', BridgeEnv],
    ['Codec endpoint', CodecEnv],
    ['Provider sandbox', SandboxEnv],
    ['Every process', ProviderEnv],
  ] as const)('documents every variable the %s reads', (section, schema) => {
    expect(bySection.has(section), `no "## ${section}" section`).toBe(true);
    const missing = keys(schema as unknown as z.ZodObject).filter((k) => !documented(section).has(k));
    expect(missing, `read by the ${section}'s schema, not documented under it`).toEqual([]);
  });

  it('names no variable that no code reads', async () => {
    const sources: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(join(projectRoot, dir), { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (!['node_modules', 'dist'].includes(entry.name)) await walk(path);
        } else if (/\.(ts|js|cjs|mjs|sh)$/.test(entry.name)) sources.push(await readFile(join(projectRoot, path), 'utf8'));
      }
    };
    for (const dir of ['src', 'packages/sandbox/src', 'tools', 'bin', 'scripts', 'test/setup', 'test/support']) await walk(dir);
    const code = sources.join('\n');
    const named = new Set([...bySection.values()].flatMap((s) => [...s]));
    const unread = [...named].filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
    expect(unread, 'named in docs/configuration.md, read by no code').toEqual([]);
  });
});
