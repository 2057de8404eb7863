// The client package as a backend gets it: built from src/client/index.ts, packed with `npm pack`, holding only
// built JavaScript and declarations that import its declared dependencies (no server library), installed from the
// tarball into a copy of examples/backend/ outside the tree, type-checked there, and run as a backend on another
// machine would be (its own directory and settings, no path shared with the worker) against a real worker,
// sandbox, bridge, S3-compatible store and Temporal server: it uploads its PDF, starts a transaction with two
// signers, signs for them through the sandbox helper, downloads and checks the archive, and verifies its ordered
// events, with the package only.
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ArchiveManifest } from '../../src/archive/manifest.js';
import { S3ArchiveStore } from '../../src/archive/s3-store.js';
import { AesGcmCodec, ENCRYPTED_ENCODING, newCodecKeys, parseCodecKeys } from '../../src/codec/aes-gcm-codec.js';
import { S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { freePort } from '../support/temporal.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const rootPackage = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
};
/** What a backend must never install with the client: the server's HTTP, storage, PDF, PKI, cloud and logging libraries. */
const SERVER_PACKAGES = [
  'fastify',
  '@fastify/multipart',
  'better-sqlite3',
  'pdf-lib',
  '@pdf-lib/fontkit',
  '@libpdf/core',
  'pdfjs-dist',
  '@signpdf/signpdf',
  'pkijs',
  'asn1js',
  '@aws-sdk/client-s3',
  '@aws-sdk/lib-storage',
  'pino',
  'prom-client',
  'undici',
  'yauzl',
  'yazl',
  '@temporalio/worker',
  '@temporalio/activity',
];

interface PackedPackage {
  name: string;
  version: string;
  type: string;
  exports: Record<string, Record<string, string>>;
  files: string[];
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

let work: string;
let tarball: string;
let unpacked: string;
let example: string;
let env: EsignTestEnv | undefined;
let s3: TestS3 | undefined;
/** Put back after the file: later files in this test process read the environment too. */
const codecKeysBefore = process.env.ESIGN_CODEC_KEYS;
const BUCKET = 'esign-store';

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'esign-client-package-'));
  // `prepack` builds dist/ from the sources first (npm run build:client), so the tarball is never stale.
  const { stdout } = await run('npm', ['pack', './packages/client', '--pack-destination', work, '--json'], { cwd: root });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string }[];
  tarball = join(work, packed!.filename);
  unpacked = join(work, 'unpacked');
  await mkdir(unpacked);
  await run('tar', ['-xzf', tarball, '-C', unpacked]);
  example = join(work, 'example');
  await cp(join(root, 'examples/backend'), example, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|dist|package-lock\.json)$/.test(src),
  });
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: example });
}, 180_000);

afterAll(async () => {
  await env?.close();
  await s3?.close();
  if (codecKeysBefore === undefined) delete process.env.ESIGN_CODEC_KEYS;
  else process.env.ESIGN_CODEC_KEYS = codecKeysBefore;
  if (work) await rm(work, { recursive: true, force: true });
});

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

/** Every module a file names that is not a relative path: static and dynamic imports, re-exports, requires. */
function bareSpecifiers(code: string): string[] {
  const found = new Set<string>();
  const patterns = [
    /\b(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\bcreateRequire\s*\([^)]*\)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const [, spec] of code.matchAll(pattern)) if (!spec!.startsWith('.')) found.add(spec!);
  return [...found];
}

const packageOf = (spec: string) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

it('packs built JavaScript and declarations, importing only its declared dependencies and no server library', async () => {
  const manifest = JSON.parse(await readFile(join(unpacked, 'package/package.json'), 'utf8')) as PackedPackage;
  expect(manifest).toMatchObject({ name: '@esign-orchestrator/client', version: rootPackage.version, type: 'module', files: ['dist'] });
  expect(manifest.engines.node).toBeTruthy();

  // Nothing but what was built, the manifest and the integrators' README: no sources, tests or workflows.
  const files = await filesUnder(join(unpacked, 'package'));
  expect(files.filter((f) => !/^dist\/.+\.(js|d\.ts)$/.test(f)).sort()).toEqual(['README.md', 'package.json']);
  expect(files).toContain('dist/client/index.js');
  // Every module has its declarations, and the entry's conditions point at files that exist.
  for (const js of files.filter((f) => f.endsWith('.js'))) expect(files, js).toContain(js.replace(/\.js$/, '.d.ts'));
  for (const target of Object.values(manifest.exports['.']!)) expect(files).toContain(target.replace(/^\.\//, ''));
  expect(Object.keys(manifest.exports['.']!).slice(0, 2)).toEqual(['types', 'import']);

  const declared = { ...manifest.dependencies, ...manifest.peerDependencies };
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const imported = new Map<string, string[]>();
  for (const file of files.filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))) {
    for (const spec of bareSpecifiers(await readFile(join(unpacked, 'package', file), 'utf8'))) {
      if (builtins.has(spec)) continue;
      imported.set(packageOf(spec), [...(imported.get(packageOf(spec)) ?? []), file]);
    }
  }
  // The scan sees what the code imports (a scan that found nothing would prove nothing).
  expect([...imported.keys()]).toEqual(expect.arrayContaining(['@temporalio/client', 'zod']));
  const undeclared = [...imported].filter(([name]) => !(name in declared));
  expect(undeclared, 'imported but not declared').toEqual([]);
  expect([...imported.keys()].filter((name) => SERVER_PACKAGES.includes(name))).toEqual([]);
  expect(Object.keys(declared).filter((name) => SERVER_PACKAGES.includes(name))).toEqual([]);
  // No dependency declared that nothing imports, and each on the range the orchestrator itself is built and tested with.
  expect(Object.keys(declared).filter((name) => !imported.has(name))).toEqual([]);
  for (const [name, range] of Object.entries(declared)) expect(range, name).toBe(rootPackage.dependencies[name]);
});

it('installs from the tarball into a backend outside the tree, whose code type-checks against its declarations', async () => {
  const installed = join(example, 'node_modules/@esign-orchestrator/client');
  // A copy from the tarball, not a link into this repository.
  expect(existsSync(join(installed, 'dist/client/index.d.ts'))).toBe(true);
  expect(existsSync(join(installed, 'src'))).toBe(false);
  for (const server of SERVER_PACKAGES) expect(existsSync(join(example, 'node_modules', server)), server).toBe(false);

  // One tsc run, without skipLibCheck (the example's own setting skips the declarations of every package): what it
  // reports in the example's code is what the example's setting reports, and the package's own declarations hold in
  // a strict consumer too. Only the other packages' declarations may fail it: the Temporal SDK's name modules it does
  // not install (ms, source-map), which is why the example skips them.
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const strict = await run(process.execPath, [tsc, '-p', join(example, 'tsconfig.json'), '--skipLibCheck', 'false', '--pretty', 'false'], {
    cwd: example,
  }).then(
    () => ({ failed: false, out: '' }),
    (err: Error & { stdout?: string }) => ({ failed: true, out: err.stdout || err.message }),
  );
  const errors = strict.out.split('\n').filter((line) => /error TS\d+/.test(line));
  // A failed run that reported no diagnostic (tsc itself broke) is a failure too.
  if (strict.failed && errors.length === 0) errors.push(strict.out);
  const ofOtherPackages = (line: string) => line.startsWith('node_modules/') && !line.includes('@esign-orchestrator/client');
  expect(
    errors.filter((line) => !ofOtherPackages(line)),
    `the example does not type-check against the package:\n${strict.out}`,
  ).toEqual([]);
}, 60_000);

it("runs a backend's whole path from the example, through the package only: upload, two signers, sandbox signing, the archive from S3, ordered events", async () => {
  const keys = newCodecKeys('example-1');
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const port = await freePort();
  // The workers' one store the backend reaches, over HTTP: documents under shared/, the archive under archive/.
  s3 = await startS3(BUCKET);
  // The bridge (in this process) reads the keys from the environment, as every service of the stack does.
  process.env.ESIGN_CODEC_KEYS = keys;
  env = await startEsignTestEnv({
    bridge: true,
    // The worker refuses what is not encrypted with its keys, as in production.
    dataConverter: { payloadCodecs: [new AesGcmCodec(parseCodecKeys(keys), { plaintext: 'refuse' })] },
    deps: {
      callbackSecrets: [secret],
      allowedUrls: [`http://127.0.0.1:${port}`],
      // The worker's own stores (over the AWS SDK), and nothing on its disk readable as a document.
      objects: new S3ObjectStore(s3.client, BUCKET, 'shared'),
      archive: new S3ArchiveStore({ client: s3.client, bucket: BUCKET, prefix: 'archive' }),
      documentRoots: [],
    },
  });
  const sandbox = env.sandbox;

  // Another machine: its own working directory, and only its own settings (no path of the worker's among them).
  const child = spawn(
    process.execPath,
    [
      join(example, 'src/main.ts'),
      '--approver',
      'cfo',
      '--approver',
      'legal',
      '--callback-port',
      String(port),
      '--sign-in-sandbox',
      sandbox.running.url,
      '--out',
      'signed',
    ],
    {
      cwd: example,
      env: {
        PATH: process.env.PATH,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        ESIGN_TASK_QUEUE: env.taskQueue,
        ESIGN_CODEC_KEYS: keys,
        ESIGN_CALLBACK_SECRETS: secret,
        ESIGN_TEMPLATE_STORE: `s3://${BUCKET}/shared`,
        ESIGN_ARCHIVE_S3_ENDPOINT: s3.endpoint,
        ESIGN_ARCHIVE_S3_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
        AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
      lines.push(JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>);
      buffered = buffered.slice(nl + 1);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.on('exit', done));
  const ofKind = (kind: string) => lines.filter((l) => l.kind === kind);

  try {
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 180_000))]);
    const said = `${stderr}${JSON.stringify(lines, null, 1)}`;
    expect(code, said).toBe(0);
    expect(ofKind('failed'), said).toEqual([]);

    // (1) The PDF it generated went to the workers' store by its SHA-256, where the worker's own store finds it.
    const [uploaded] = ofKind('uploaded') as { sha256: string; key: string }[];
    expect(uploaded!.key).toBe(`uploads/${uploaded!.sha256}.pdf`);
    const stored = await new S3ObjectStore(s3.client, BUCKET, 'shared').get(uploaded!.key);
    expect(createHash('sha256').update(stored!).digest('hex')).toBe(uploaded!.sha256);
    expect(stored!.subarray(0, 5).toString('latin1')).toBe('%PDF-');

    // (2) Sent only once both approvers approved, the second approval sending it.
    expect(ofKind('approved')).toEqual([
      { kind: 'approved', approverId: 'cfo', approvals: 1, quorum: 2, outcome: 'pending' },
      { kind: 'approved', approverId: 'legal', approvals: 2, quorum: 2, outcome: 'sending' },
    ]);

    // (2, 3) Two signers, a URL each, on the provider's origin; what went through Temporal is encrypted.
    const urls = ofKind('signing-url') as { url: string; transactionId: string; participantId: string; referenceId: string }[];
    expect(urls).toHaveLength(2);
    expect(new Set(urls.map((u) => u.participantId)).size).toBe(2);
    expect(new Set(urls.map((u) => u.url)).size).toBe(2);
    for (const { url } of urls) expect(new URL(url).origin).toBe(new URL(sandbox.running.url).origin);
    const { referenceId, transactionId } = urls[0]!;
    const history = await env.temporal.client.workflow.getHandle(`esign-${referenceId}`).fetchHistory();
    const startInput = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(new TextDecoder().decode(startInput?.metadata?.encoding ?? new Uint8Array())).toBe(ENCRYPTED_ENCODING);

    // (4) Both signed through the package's sandbox helper, the second completing the transaction.
    expect(ofKind('signed')).toEqual([
      { kind: 'signed', participantId: urls[0]!.participantId, transactionId, completed: false },
      { kind: 'signed', participantId: urls[1]!.participantId, transactionId, completed: true },
    ]);

    // (5) The outcome, archived in S3.
    const [outcome] = ofKind('outcome') as { status: string; transactionId: string; archive: { uri: string; sha256: string } }[];
    expect(outcome).toMatchObject({ status: 'completed', transactionId, referenceId });
    expect(outcome!.archive.uri).toMatch(new RegExp(`^s3://${BUCKET}/archive/`));

    // (6) The ZIP and manifest.json it downloaded into its own directory: the ZIP's bytes hash to the result, the
    // manifest is that ZIP's, and the document signed is the one uploaded.
    const [archive] = ofKind('archive') as { zip: string; manifest: string; checked: boolean }[];
    expect(archive).toMatchObject({ zip: join(example, 'signed', referenceId, 'completed.zip'), checked: true });
    const zip = await readFile(archive!.zip);
    expect(zip.subarray(0, 2).toString('latin1')).toBe('PK');
    expect(createHash('sha256').update(zip).digest('hex')).toBe(outcome!.archive.sha256);
    const manifest = JSON.parse(await readFile(archive!.manifest, 'utf8')) as ArchiveManifest;
    expect(manifest).toMatchObject({ referenceId, transactionId, zip: { sha256: outcome!.archive.sha256 } });
    expect(manifest.documents.map((d) => d.sha256)).toEqual([uploaded!.sha256]);
    expect(manifest.approvals?.map((a) => a.approverId)).toEqual(['cfo', 'legal']);

    // (7) The events reached its endpoint and verified with the package's verifier, each once, numbered 1..n in order.
    const events = ofKind('event') as { id: string; type: string; sequence: number; data: { referenceId?: string } }[];
    expect(events.map((e) => e.type)).toEqual([
      'approval.requested',
      'approval.given',
      'approval.given',
      'participant.signed',
      'participant.signed',
      'transaction.completed',
    ]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(events.every((e) => e.data.referenceId === referenceId)).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(ofKind('events')).toEqual([{ kind: 'events', sequences: [1, 2, 3, 4, 5, 6], complete: true, inOrder: true }]);
  } finally {
    if (child.exitCode === null) child.kill();
  }
}, 240_000);
