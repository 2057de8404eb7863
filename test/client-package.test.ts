// The client package as a backend gets it: built from src/client/index.ts, packed with `npm pack`, holding only
// built JavaScript and declarations that import its declared dependencies (no server library), installed from the
// tarball into a copy of examples/backend/ outside the tree, type-checked there, and run against a real worker,
// sandbox, bridge and Temporal server: the example's transaction is signed and it reports the completed outcome,
// its archive, and the signed events it verified with the package.
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, newCodecKeys, parseCodecKeys } from '../src/codec/aes-gcm-codec.js';
import { startEsignTestEnv, type EsignTestEnv } from './support/esign-env.js';
import { eventually } from './support/eventually.js';
import { freePort } from './support/temporal.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
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
  delete process.env.ESIGN_CODEC_KEYS;
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

it('runs a transaction from the example backend: a signing URL, encrypted payloads, signed events, the completed outcome', async () => {
  const keys = newCodecKeys('example-1');
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const port = await freePort();
  // The bridge (in this process) reads the keys from the environment, as every service of the stack does.
  process.env.ESIGN_CODEC_KEYS = keys;
  env = await startEsignTestEnv({
    bridge: true,
    // The worker refuses what is not encrypted with its keys, as in production.
    dataConverter: { payloadCodecs: [new AesGcmCodec(parseCodecKeys(keys), { plaintext: 'refuse' })] },
    deps: { callbackSecrets: [secret], allowedUrls: [`http://127.0.0.1:${port}`] },
  });
  const sandbox = env.sandbox;

  const child = spawn(
    process.execPath,
    [join(example, 'src/main.ts'), env.pdfs[0]!, '--name', 'Ada Lovelace', '--callback-port', String(port)],
    {
      cwd: example,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        ESIGN_TASK_QUEUE: env.taskQueue,
        ESIGN_CODEC_KEYS: keys,
        ESIGN_CALLBACK_SECRETS: secret,
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
    const issued = await Promise.race([
      eventually('the example to print a signing URL', () => ofKind('signing-url')[0], 60_000, 100),
      exited.then((code) => {
        throw new Error(`the example exited ${code} before a signing URL: ${stderr}${JSON.stringify(lines)}`);
      }),
    ]);
    const { url, transactionId, participantId, referenceId } = issued as Record<string, string>;
    // The URL opens the provider's signing page for that signer.
    expect(new URL(url!).origin).toBe(new URL(sandbox.running.url).origin);
    const page = await fetch(url!);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);

    // What the backend sent through Temporal is encrypted with the codec the package gave it.
    const history = await env.temporal.client.workflow.getHandle(`esign-${referenceId}`).fetchHistory();
    const startInput = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(new TextDecoder().decode(startInput?.metadata?.encoding ?? new Uint8Array())).toBe(ENCRYPTED_ENCODING);

    await sandbox.control.signAs(transactionId!, participantId!);
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 120_000))]);
    expect(code, `${stderr}${JSON.stringify(lines)}`).toBe(0);

    const [outcome] = ofKind('outcome') as {
      status: string;
      transactionId: string;
      archive: { uri: string; sha256: string; files: string[] };
    }[];
    expect(outcome).toMatchObject({ status: 'completed', transactionId, referenceId });
    // The archive it reports is there, with the bytes the outcome names.
    const zip = await readFile(fileURLToPath(outcome!.archive.uri));
    expect(createHash('sha256').update(zip).digest('hex')).toBe(outcome!.archive.sha256);
    expect(outcome!.archive.files.length).toBeGreaterThan(0);

    // The orchestrator's events reached the backend and verified with the package's verifier, each once.
    const events = ofKind('event') as { id: string; type: string; data: { referenceId?: string } }[];
    expect(events.map((e) => e.type)).toEqual(['participant.signed', 'transaction.completed']);
    expect(events.every((e) => e.data.referenceId === referenceId)).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(ofKind('failed')).toEqual([]);
  } finally {
    if (child.exitCode === null) child.kill();
  }
}, 240_000);
