import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EsignClient } from '../../src/esign/client.js';
import type { CreateTransactionRequest } from '../../src/esign/schemas.js';
import type { SandboxConfig } from '../../packages/sandbox/src/config.js';
import { SandboxControlClient, type DeliveryRecord } from '../../src/client/sandbox-control.js';
import { sandboxConfig, startSandbox, type RunningSandbox } from '../../packages/sandbox/src/index.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import type { EvidencePolicy } from '../../src/archive/evidence.js';
import { afterAll, beforeAll } from 'vitest';
import { participant } from './fixtures.js';
import { connectToTestServer, type TemporalTestContext } from './temporal.js';
import { providerTrust } from '../../src/evidence/trust.js';

export interface TestSandbox {
  running: RunningSandbox;
  client: EsignClient;
  /** The sandbox's test controls over HTTP. */
  control: SandboxControlClient;
  token: string;
  dataDir: string;
  /** Webhook deliveries for a transaction, as the sandbox records them. */
  deliveries(transactionId: string): Promise<DeliveryRecord[]>;
  /** Stops the sandbox and starts it again on the same data dir and port. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A real sandbox over HTTP on a free port, in a fresh data dir. */
/**
 * One sandbox PKI per test run (ESIGN_TEST_SANDBOX_PKI, made by test/setup/temporal-server.ts), else per test
 * process, copied into each sandbox's data dir: RSA key generation costs about a second of CPU.
 */
let sharedPki: Promise<string> | undefined;
async function seedPki(dataDir: string): Promise<void> {
  sharedPki ??= (async () => {
    if (process.env.ESIGN_TEST_SANDBOX_PKI) return process.env.ESIGN_TEST_SANDBOX_PKI;
    const dir = await mkdtemp(join(tmpdir(), 'esign-sandbox-pki-'));
    await SandboxSeal.open(dir);
    return dir;
  })();
  const source = await sharedPki;
  const target = join(dataDir, 'pki');
  if (existsSync(target)) return;
  await cp(source, target, { recursive: true });
}

/** What a worker trusts when this sandbox is its provider: the sandbox CA, seals required, certificate of completion required. */
export function sandboxEvidencePolicy(sandbox: TestSandbox): EvidencePolicy {
  return { signatures: 'require', trust: providerTrust(sandbox.running), requireCompletionCertificate: true };
}

export async function startTestSandbox(overrides: Partial<SandboxConfig> = {}): Promise<TestSandbox> {
  const dataDir = overrides.dataDir ?? (await mkdtemp(join(tmpdir(), 'esign-sandbox-')));
  await seedPki(dataDir);
  let running = await startSandbox(sandboxConfig({ ...overrides, dataDir }));
  const token = await running.issueToken();
  const ts: TestSandbox = {
    running,
    client: new EsignClient({ baseUrl: running.url, token, ...(overrides.tls ? { ca: overrides.tls.cert } : {}) }),
    control: new SandboxControlClient(running.url, overrides.tls ? { ca: overrides.tls.cert } : {}),
    token,
    dataDir,
    deliveries: (transactionId) => ts.control.deliveries({ transactionId }),
    async restart() {
      const port = Number(new URL(running.url).port);
      const urls = [...running.webhookUrls];
      await running.stop();
      running = await startSandbox(sandboxConfig({ ...overrides, dataDir, port, webhookUrls: urls }));
      ts.running = running;
    },
    async close() {
      await ts.client.close();
      await ts.control.close();
      await running.stop();
      if (!overrides.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
  return ts;
}

/** Writes sample PDFs to a temp dir and returns their paths. */
export async function samplePdfFiles(titles: string[], pages = 1): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'esign-pdfs-'));
  return Promise.all(
    titles.map(async (title, i) => {
      const path = join(dir, `${i}-${title.replace(/\W+/g, '_')}.pdf`);
      await writeFile(path, await samplePdf(title, pages));
      return path;
    }),
  );
}

/** Uploads sample PDFs and builds a create request with the given number of signers, each with a signature and a date tag. */
export async function uploadedRequest(
  client: EsignClient,
  options: { signers?: number; documents?: number; signingOrder?: boolean; status?: 'draft' | 'esign_pending' } = {},
): Promise<CreateTransactionRequest> {
  const titles = Array.from({ length: options.documents ?? 1 }, (_, i) => `Agreement ${i + 1}`);
  const uploaded = await client.uploadDocuments((await samplePdfFiles(titles)).map((path) => ({ path })));
  const signers = Array.from({ length: options.signers ?? 1 }, (_, i) =>
    participant({ email: `signer${i + 1}@example.com`, firstName: `Signer${i + 1}`, lastName: 'Tester', order: i + 1 }),
  );
  return {
    status: options.status ?? 'esign_pending',
    referenceId: `ref-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    notifyParticipants: { email: false },
    ...(options.signingOrder !== undefined ? { signingOrder: options.signingOrder } : {}),
    documents: uploaded.map((u, d) => ({
      title: titles[d]!,
      StoragePath: u.StoragePath,
      tags: signers.flatMap((s, i) => [
        { type: 'SIGNATURETEMPLATE' as const, x: 72 + i * 250, y: 120, width: 200, height: 30, signerId: s.id, customData: {}, page: 0 },
        {
          type: 'DATETEMPLATE' as const,
          x: 72 + i * 250,
          y: 80,
          width: 120,
          height: 20,
          signerId: s.id,
          customData: {},
          page: 0,
          dateFormat: 'DD/MM/YYYY' as const,
        },
      ]),
    })),
    participants: signers,
  };
}

/**
 * The suite's dev server and a fresh sandbox for the tests of one file, opened before them and closed after:
 * read `env.ctx` and `env.sandbox` inside the tests.
 */
export function devServerAndSandbox(): { ctx: TemporalTestContext; sandbox: TestSandbox } {
  const env = {} as { ctx: TemporalTestContext; sandbox: TestSandbox };
  beforeAll(async () => {
    env.ctx = await connectToTestServer();
    env.sandbox = await startTestSandbox();
  });
  afterAll(async () => {
    await env.sandbox?.close();
    await env.ctx?.close();
  });
  return env;
}
