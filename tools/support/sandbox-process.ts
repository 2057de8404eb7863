import { existsSync } from 'node:fs';
import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxControlClient } from '../../src/client/sandbox-control.js';
import { launch, type Launched } from './launch.js';

export interface SandboxProcess {
  url: string;
  /** A dev API token of the default organization. */
  token: string;
  webhookSecret: string;
  /** The sandbox CA as a PEM file, for a worker's ESIGN_TRUST_ANCHORS. */
  caFile: string;
  /** The keys it seals with, for a worker's ESIGN_SEAL_PINS (GET /sandbox/pins). */
  sealPins: string[];
  control: SandboxControlClient;
  process: Launched;
  stop(): Promise<void>;
}

/** Starts the provider sandbox in its own process (so its memory and CPU are not the caller's), on a free port. */
export async function launchSandbox(dataDir: string, env: Record<string, string> = {}): Promise<SandboxProcess> {
  // The test suite's one PKI for all its sandboxes (test/setup/temporal-server.ts): its keys, not new ones, as a
  // restarted sandbox keeps the keys in its data dir.
  const pki = globalThis.process.env.ESIGN_TEST_SANDBOX_PKI;
  if (pki && !existsSync(join(dataDir, 'pki'))) await cp(pki, join(dataDir, 'pki'), { recursive: true });
  const process = await launch('packages/sandbox/src/main.ts', {
    env: { SANDBOX_PORT: '0', SANDBOX_DATA_DIR: dataDir, SANDBOX_MAX_UPLOAD_BYTES: String(2 ** 31), ...env },
    ready: /listening on \S+[\s\S]*dev API token:\s+\S+[\s\S]*webhook secret:\s+\S+\s/,
  });
  const out = process.output();
  const url = /listening on (\S+)/.exec(out)![1]!;
  const control = new SandboxControlClient(url);
  // Fetched as any client would, from the sandbox's public endpoint.
  const caFile = join(dataDir, 'ca-for-clients.pem');
  await writeFile(caFile, await (await fetch(`${url}/sandbox/ca.pem`)).text());
  const sealPins = (await (await fetch(`${url}/sandbox/pins`)).text()).split(/\s+/).filter(Boolean);
  return {
    caFile,
    sealPins,
    url,
    token: /dev API token:\s+(\S+)/.exec(out)![1]!,
    webhookSecret: /webhook secret:\s+(\S+)/.exec(out)![1]!,
    control,
    process,
    async stop() {
      await control.close();
      await process.stop();
    },
  };
}

/**
 * A worker's environment with this sandbox as its provider, as in production:
 * the sandbox's token, its CA as the trust anchor and its sealing keys pinned, the certificate of
 * completion required. Shared by the cluster, chaos and benchmark stacks.
 */
export function sandboxWorkerEnv(sandbox: SandboxProcess, dirs: { archive: string; documents: string }): Record<string, string> {
  return {
    ESIGN_PROVIDER_URL: sandbox.url,
    ESIGN_PROVIDER_TOKEN: sandbox.token,
    ESIGN_ARCHIVE_DIR: dirs.archive,
    ESIGN_DOCUMENT_ROOTS: dirs.documents,
    ESIGN_TRUST_ANCHORS: sandbox.caFile,
    ESIGN_SEAL_PINS: sandbox.sealPins.join(','),
    ESIGN_REQUIRE_COMPLETION_CERTIFICATE: 'true',
  };
}

/** A bridge's environment with this sandbox as its provider: the webhook secret, and the API it asks who owns a transaction. */
export function sandboxBridgeEnv(sandbox: SandboxProcess): Record<string, string> {
  return { ESIGN_WEBHOOK_SECRETS: sandbox.webhookSecret, ESIGN_PROVIDER_URL: sandbox.url, ESIGN_PROVIDER_TOKEN: sandbox.token };
}
