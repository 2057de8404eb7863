import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EsignClient } from '../../src/esign/client.js';
import { EsignApiError } from '../../src/esign/errors.js';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';

// The spec says all communication is over HTTPS: the sandbox serves TLS from a
// cert/key pair, and the client trusts a private CA when given one.
let sb: TestSandbox;
let cert: string;
beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  cert = await readFile(join(dir, 'cert.pem'), 'utf8');
  sb = await startTestSandbox({ tls: { cert, key: await readFile(join(dir, 'key.pem'), 'utf8') } });
});
afterAll(async () => {
  await sb?.close();
});

it('serves HTTPS, which the client accepts only with the right CA', async () => {
  expect(sb.running.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  const trusting = new EsignClient({ baseUrl: sb.running.url, token: sb.token, ca: cert });
  await expect(trusting.listTransactions()).resolves.toMatchObject({ total: 0 });
  await trusting.close();
  const untrusting = new EsignClient({ baseUrl: sb.running.url, token: sb.token });
  const err = await untrusting.listTransactions().catch((e: unknown) => e);
  await untrusting.close();
  expect(err).toBeInstanceOf(EsignApiError);
  expect((err as EsignApiError).message).toMatch(/certificate/i);
});
