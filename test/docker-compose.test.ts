import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { cliTypeOf, esignSearchAttributes } from '../workflows/search-attributes.js';

// No Docker engine runs here: the compose file is validated statically with
// Debian's docker-compose (installed by .ci/run), which needs no engine for `config`.
const root = fileURLToPath(new URL('..', import.meta.url));
const secrets = {
  ESIGN_CODEC_KEYS: 'k1:AAAA',
  ESIGN_WEBHOOK_SECRET: 'whsec_AAAA',
  SANDBOX_JWT_SECRET: 'x'.repeat(40),
  SANDBOX_ADMIN_TOKEN: 'a'.repeat(40),
};

function compose(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !(k in secrets))) as Record<string, string>;
  return new Promise((resolve) =>
    execFile('docker-compose', ['-f', 'docker-compose.yml', ...args], { cwd: root, env: { ...clean, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    ),
  );
}

it('docker-compose.yml is valid and runs the whole topology with health checks', async () => {
  const valid = await compose(['config', '-q'], secrets);
  expect(valid.stderr).toBe('');
  expect(valid.code).toBe(0);
  const services = (await compose(['config', '--services'], secrets)).stdout.split('\n').filter(Boolean).sort();
  expect(services).toEqual([
    'bridge',
    'codec',
    'postgresql',
    'sandbox',
    'sandbox-token',
    'temporal',
    'temporal-admin-tools',
    'temporal-ui',
    'worker',
  ]);
  const resolved = (await compose(['config'], secrets)).stdout;
  // The same attributes, with the same types, as the workflows define (workflows/search-attributes.ts).
  for (const sa of esignSearchAttributes) expect(resolved).toContain(`${sa.name}:${cliTypeOf(sa)}`);
  expect(resolved.match(/healthcheck:/g)?.length).toBeGreaterThanOrEqual(6);
  // The sandbox's controls are not open: it is published on the host's loopback only, and they need a token.
  expect(resolved).toMatch(/host_ip: 127\.0\.0\.1\s+target: 4010|127\.0\.0\.1:4010:4010/);
  expect(resolved).toContain('SANDBOX_ADMIN_TOKEN');
  expect(await readFile(`${root}/Dockerfile`, 'utf8')).toContain('bundle-workflows');
});

it('refuses to render without the secrets it needs', async () => {
  const missing = await compose(['config', '-q'], {});
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toMatch(/ESIGN_CODEC_KEYS|ESIGN_WEBHOOK_SECRET|SANDBOX_JWT_SECRET/);
});
