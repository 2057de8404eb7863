// The OpenAPI 3.1 document generated from the zod contract, served by the
// provider sandbox, and the sandbox fuzzed against it by Schemathesis (a
// contract-testing tool of the field, installed from PyPI): no 5xx, and every
// response conforms to the document (status, content type, schema, headers).
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const ensure = fileURLToPath(new URL('../../scripts/ensure-schemathesis.sh', import.meta.url));
let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox();
});
afterAll(async () => {
  await sb?.close();
});

// Schemathesis keeps a cache in its working directory: a scratch one, not the project's. Unbuffered, so a run killed
// at its limit still shows how far it got (Python buffers a pipe's output, and a killed run printed nothing).
const run = (file: string, args: string[], timeout: number) =>
  new Promise<{ code: number; out: string; killed: string | undefined }>((resolve) => {
    const started = Date.now();
    execFile(
      file,
      args,
      { timeout, maxBuffer: 16 * 1024 * 1024, cwd: tmpdir(), env: { ...process.env, PYTHONUNBUFFERED: '1' } },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          out: `${stdout}${stderr}`,
          killed: error?.killed
            ? `${file} was killed at its limit of ${timeout / 1000} s (after ${Math.round((Date.now() - started) / 1000)} s): ` +
              'the machine is too loaded for the run, or the sandbox stopped answering; its output so far follows'
            : undefined,
        }),
    );
  });

it('serves an OpenAPI 3.1 document covering every operation, with problem+json errors and bearer auth, and a reference page', async () => {
  const doc = (await (await fetch(`${sb.running.url}/openapi.json`)).json()) as {
    openapi: string;
    paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    components: { securitySchemes: Record<string, unknown> };
  };
  expect(doc.openapi).toBe('3.1.0');
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => m !== 'parameters')
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
  expect(operations.sort()).toEqual(
    [
      'POST /documents/upload',
      'POST /transactions',
      'GET /transactions',
      'GET /transactions/{id}',
      'PUT /transactions/{id}',
      'GET /transactions/{id}/documents',
      'POST /iframe-request',
    ].sort(),
  );
  expect(doc.components.securitySchemes).toEqual({ bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } });
  expect(doc.paths['/transactions']!.post!.responses['422']!.content).toHaveProperty(['application/problem+json']);
  const page = await fetch(`${sb.running.url}/docs`);
  expect(await page.text()).toContain('swagger-ui-bundle.js');
  expect((await fetch(`${sb.running.url}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
});

it('passes Schemathesis: no server error, every response as the document says', async () => {
  const installed = await run('bash', [ensure], 180_000);
  expect(installed.killed, installed.out).toBeUndefined();
  expect(installed.code, installed.out).toBe(0);
  const st = installed.out.trim().split('\n').at(-1)!;
  const result = await run(
    st,
    [
      'run',
      `${sb.running.url}/openapi.json`,
      '--header',
      `Authorization: Bearer ${sb.token}`,
      '--checks',
      'not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance,response_headers_conformance',
      // Per operation, for the fuzzing and stateful phases: the coverage phase's boundary cases (most of the run's
      // 1,300 test cases) come whatever the number; 15 cost three times the CPU of 5 (50 s) for 100 more random ones.
      '--max-examples',
      '5',
      '--seed',
      '1',
      '--request-timeout',
      '10',
    ],
    240_000,
  );
  expect(result.killed, result.out.slice(-4000)).toBeUndefined();
  expect(result.out).toMatch(/Test cases:\s+\d+ generated/);
  expect(result.code, result.out.slice(-4000)).toBe(0);
}, 300_000);
