// The example integrator page (tools/dev/host-page.ts) starts transactions and hands out signing URLs for any
// referenceId. Only its own page, and programs on this machine, may ask for them. A page on another site may
// not (CSRF), and neither may a name rebound to 127.0.0.1 (DNS rebinding). A stub Temporal client records
// what the page would have done.
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startHostPage, type RunningHostPage } from '../../tools/dev/host-page.js';

const calls: string[] = [];
const client = {
  workflow: {
    start: async (_type: string, options: { workflowId: string }) => {
      calls.push(`start ${options.workflowId}`);
      return { workflowId: options.workflowId };
    },
    getHandle: (workflowId: string) => ({
      executeUpdate: async () => {
        calls.push(`signing-url ${workflowId}`);
        return { url: 'http://127.0.0.1:1/sign/x' };
      },
    }),
  },
} as unknown as Client;

let host: RunningHostPage;
beforeAll(async () => {
  host = await startHostPage(
    {
      client,
      taskQueue: 'esign-test',
      callbackSecret: `whsec_${randomBytes(24).toString('base64')}`,
      signingOrigin: 'http://127.0.0.1:1',
      samplePdfPath: '/tmp/host-sample.pdf',
    },
    { host: '127.0.0.1', port: 0 },
  );
});
afterAll(async () => {
  await host?.close();
});
beforeEach(() => {
  calls.length = 0;
});

async function send(path: string, method: 'GET' | 'POST', headers: Record<string, string> = {}, body?: string) {
  const res = await request(`${host.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  return { status: res.statusCode, type: String(res.headers['content-type']), text };
}

const json = { 'content-type': 'application/json' };
const ask = JSON.stringify({ referenceId: 'host-someone-else', participantId: 'p1' });

it('starts nothing and hands out no signing URL to another site, a form, an empty POST or a rebound name', async () => {
  const { port } = new URL(host.url);
  for (const [path, body] of [
    ['/api/transactions', '{}'],
    ['/api/signing-url', ask],
  ] as const) {
    for (const [what, headers, sent] of [
      ['another origin', { ...json, origin: 'https://evil.example' }, body],
      ['a cross-site fetch', { ...json, 'sec-fetch-site': 'cross-site' }, body],
      ['another loopback port', { ...json, origin: 'http://127.0.0.1:1', 'sec-fetch-site': 'same-site' }, body],
      ['an opaque origin', { ...json, origin: 'null' }, body],
      ['a body-less POST', {}, undefined],
      ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'referenceId=host-someone-else&participantId=p1'],
      ['a text body', { 'content-type': 'text/plain' }, body],
      ['a rebound name', { ...json, host: `rebind.attacker.example:${port}` }, body],
    ] as [string, Record<string, string>, string | undefined][]) {
      const res = await send(path, 'POST', headers, sent);
      expect(res.status, `${path}: ${what}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${path}: ${what}`).toBeLessThan(500);
      expect(res.type, `${path}: ${what}`).toContain('application/problem+json');
    }
  }
  expect(calls).toEqual([]);
  // A rebound name reads nothing either: not the page, not the events.
  for (const path of ['/', '/api/events']) expect((await send(path, 'GET', { host: `rebind.attacker.example:${port}` })).status).toBe(403);
});

it('does what its own page asks, and what a program on this machine asks in JSON', async () => {
  const { port } = new URL(host.url);
  const own = { ...json, origin: new URL(host.url).origin, 'sec-fetch-site': 'same-origin' };
  const started = await send('/api/transactions', 'POST', own, '{}');
  expect(started.status).toBe(200);
  const { referenceId } = JSON.parse(started.text) as { referenceId: string };
  expect(calls).toEqual([`start esign-${referenceId}`]);

  expect((await send('/api/signing-url', 'POST', { ...json, host: `localhost:${port}` }, ask)).status).toBe(200);
  expect(calls).toEqual([`start esign-${referenceId}`, 'signing-url esign-host-someone-else']);
  expect((await send('/api/signing-url', 'POST', json, 'not json')).status).toBe(400);
  expect((await send('/', 'GET', { host: `localhost:${port}` })).status).toBe(200);
});
