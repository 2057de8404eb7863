// The worker's and the sandbox's processes hold every outbound request to the policy (src/http/outbound.ts): once
// started, the guard is the process's dispatcher, which Node's own fetch uses too. The worker reaches its allow-list
// (loopback origins named on it included) and nothing else; a sandbox started with the configuration its process
// reads from the environment (npm run sandbox, the dev stack) delivers its configured webhooks and nothing else; a
// sandbox a test starts in its own process with `sandboxConfig` leaves that process's dispatcher alone.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getGlobalDispatcher, request } from 'undici';
import { afterEach, expect, inject, it } from 'vitest';
import { EsignClient } from '../../src/esign/client.js';
import { OutboundError, uninstallOutboundGuard } from '../../src/http/outbound.js';
import { SandboxControlClient } from '../../src/client/sandbox-control.js';
import { sandboxConfig, sandboxConfigFromEnv, startSandbox } from '../../packages/sandbox/src/index.js';
import { workerConfigFromEnv } from '../../src/worker/config.js';
import { startWorker } from '../../src/worker/start.js';
import { eventually } from '../support/eventually.js';
import { listener, type Listener } from '../support/planted-signature.js';
import { startTestSandbox, uploadedRequest } from '../support/sandbox.js';
import { uniqueTaskQueue } from '../support/temporal.js';

const open: Listener[] = [];

/** What a refused request rejects with: the OutboundError itself, or the one fetch wraps. */
async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  const found = err instanceof OutboundError ? err : (err as { cause?: unknown } | undefined)?.cause;
  expect(found).toBeInstanceOf(OutboundError);
  return found as OutboundError;
}
afterEach(async () => {
  await uninstallOutboundGuard();
  await Promise.all(open.splice(0).map((l) => l.close()));
});

it('a sandbox process delivers its configured webhooks under the guard, and nothing else leaves it', async () => {
  const receiver = await listener();
  const internal = await listener();
  open.push(receiver, internal);
  receiver.answer = (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  };
  const dataDir = await mkdtemp(join(tmpdir(), 'esign-outbound-sandbox-'));

  const before = getGlobalDispatcher();
  const inTest = await startSandbox(sandboxConfig({ dataDir }));
  expect(getGlobalDispatcher()).toBe(before);
  await inTest.stop();

  const running = await startSandbox(
    sandboxConfigFromEnv({ SANDBOX_DATA_DIR: dataDir, SANDBOX_PORT: '0', SANDBOX_WEBHOOK_URLS: `${receiver.url}/hooks` }),
  );
  const token = await running.issueToken();
  // The provider's clients keep pools of their own: the guard is for what the process requests, not what it serves.
  const client = new EsignClient({ baseUrl: running.url, token });
  const control = new SandboxControlClient(running.url);
  try {
    expect(getGlobalDispatcher()).not.toBe(before);
    expect((await refusal(fetch(`${internal.url}/latest/meta-data/`))).reason).toBe('not-allowed');
    expect(internal.connections).toBe(0);

    const request = await uploadedRequest(client, { signers: 1 });
    const created = await client.createTransaction(request);
    await control.signAs(created.id!, request.participants[0]!.id);
    await eventually('the completion webhook delivered', async () => receiver.requests.some((r) => r.url === '/hooks'), 30_000, 100);
    expect(receiver.requests.every((r) => r.method === 'POST' && r.url === '/hooks')).toBe(true);
  } finally {
    await client.close();
    await control.close();
    await running.stop();
  }
}, 60_000);

it('a worker reaches its allow-list (a loopback origin named on it) and nothing else, from its start to its stop', async () => {
  const allowed = await listener();
  const internal = await listener();
  open.push(allowed, internal);
  allowed.answer = (_req, res) => res.end('ok');
  const sandbox = await startTestSandbox();
  const previous = { address: process.env.TEMPORAL_ADDRESS, namespace: process.env.TEMPORAL_NAMESPACE };
  process.env.TEMPORAL_ADDRESS = inject('temporalAddress');
  process.env.TEMPORAL_NAMESPACE = inject('temporalNamespace');
  try {
    const config = workerConfigFromEnv({
      ESIGN_TASK_QUEUE: uniqueTaskQueue('outbound'),
      ESIGN_PROVIDER_URL: sandbox.running.url,
      ESIGN_PROVIDER_TOKEN: sandbox.token,
      ESIGN_ARCHIVE_DIR: await mkdtemp(join(tmpdir(), 'esign-outbound-archive-')),
      ESIGN_SIGNATURE_VERIFICATION: 'off',
      ESIGN_ALLOWED_URLS: allowed.url,
    });
    const before = getGlobalDispatcher();
    const worker = await startWorker(config);
    try {
      expect(getGlobalDispatcher()).not.toBe(before);
      expect(await (await fetch(`${allowed.url}/`)).text()).toBe('ok');
      expect((await refusal(fetch(`${internal.url}/latest/meta-data/`))).reason).toBe('not-allowed');
      expect((await refusal(request(`${internal.url}/`))).reason).toBe('not-allowed');
      expect(internal.connections).toBe(0);
    } finally {
      await worker.close();
    }
    // Stopped, it withdraws what it allowed.
    expect((await refusal(fetch(`${allowed.url}/`))).reason).toBe('not-allowed');
  } finally {
    process.env.TEMPORAL_ADDRESS = previous.address;
    process.env.TEMPORAL_NAMESPACE = previous.namespace;
    if (previous.address === undefined) delete process.env.TEMPORAL_ADDRESS;
    if (previous.namespace === undefined) delete process.env.TEMPORAL_NAMESPACE;
    await sandbox.close();
  }
}, 120_000);
