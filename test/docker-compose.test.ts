import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { cliTypeOf, esignSearchAttributes } from '../src/definitions/search-attributes.js';

// No Docker engine runs here: the compose file is validated statically with
// Debian's docker-compose (installed by .ci/run), which needs no engine for `config`.
const root = fileURLToPath(new URL('..', import.meta.url));
const secrets = {
  ESIGN_CODEC_KEYS: 'k1:AAAA',
  ESIGN_WEBHOOK_SECRET: 'whsec_AAAA',
  SANDBOX_JWT_SECRET: 'x'.repeat(40),
  SANDBOX_ADMIN_TOKEN: 'a'.repeat(40),
  ESIGN_CODEC_AUTH_TOKEN: 'c'.repeat(40),
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
    'temporal-admin-tools',
    'temporal-frontend',
    'temporal-history',
    'temporal-matching',
    'temporal-schema',
    'temporal-ui',
    'temporal-worker',
    'worker',
  ]);
  const resolved = (await compose(['config'], secrets)).stdout;
  // The Temporal services run on the configuration `npm run cluster` uses (docs/cluster.md), one service per container.
  for (const service of ['history', 'matching', 'frontend', 'worker']) expect(resolved).toContain(`TEMPORAL_SERVICES: ${service}`);
  expect(resolved).toContain('TEMPORAL_SERVER_CONFIG_FILE_PATH: /etc/temporal/esign/config.yaml');
  expect(resolved.match(/\/deploy\/temporal:\/etc\/temporal\/esign:ro/g)).toHaveLength(5);
  expect(resolved).toContain('/etc/temporal/esign/setup-namespace.sh');
  // One server version for the images and the native build.
  const version = /^version=(\S+)$/m.exec(await readFile(`${root}/scripts/ensure-temporal-server.sh`, 'utf8'))![1]!;
  expect(resolved.match(/image: temporalio\/(?:server|admin-tools):(\S+)/g)!.map((m) => m.split(':').at(-1))).toEqual(
    Array.from({ length: 6 }, () => version),
  );
  // The namespace script registers the same attributes, with the same types, as the workflows define (src/definitions/search-attributes.ts).
  const script = await readFile(`${root}/deploy/temporal/setup-namespace.sh`, 'utf8');
  const listed = /for sa in ([^;]+);/.exec(script)![1]!.trim().split(/\s+/);
  expect(listed).toEqual(esignSearchAttributes.map((sa) => `${sa.name}:${cliTypeOf(sa)}`));
  expect(resolved.match(/healthcheck:/g)?.length).toBeGreaterThanOrEqual(6);
  // The sandbox's controls are not open: it is published on the host's loopback only, and they need a token.
  expect(resolved).toMatch(/host_ip: 127\.0\.0\.1\s+target: 4010|127\.0\.0\.1:4010:4010/);
  expect(resolved).toContain('SANDBOX_ADMIN_TOKEN');
  const dockerfile = await readFile(`${root}/Dockerfile`, 'utf8');
  expect(dockerfile).toContain('bundle-workflows');
  // `npm ci` runs the Node preflight (preinstall): the image has it before installing.
  expect(dockerfile.indexOf('COPY scripts/preflight.cjs')).toBeGreaterThan(-1);
  expect(dockerfile.indexOf('COPY scripts/preflight.cjs')).toBeLessThan(dockerfile.indexOf('RUN npm ci'));
});

/** The rendered config's services, each as its block of text (docker-compose 1.x renders YAML only). */
function servicesOf(rendered: string): Map<string, string> {
  const body = rendered.slice(rendered.indexOf('\nservices:\n') + 11).split(/\n(?=\S)/)[0]!;
  return new Map(body.split(/\n(?= {2}[\w-]+:\n)/).map((block) => [/^\s*([\w-]+):/.exec(block)![1]!, block]));
}

/** A service's published ports as host address and container port (the short and long syntax alike). */
function publishedPorts(block: string): { host: string; target: number }[] {
  const ports = /\n {4}ports:\n((?: {4}[- ] .*\n?)+)/.exec(block)?.[1] ?? '';
  return ports
    .split(/\n {4}- /)
    .filter((p) => p.trim())
    .map((p) => {
      const short = /(?:(\d+\.\d+\.\d+\.\d+):)?\d+:(\d+)/.exec(p.replace(/^\s*- /, ''));
      if (!/published:/.test(p) && short) return { host: short[1] ?? '0.0.0.0', target: Number(short[2]) };
      return { host: /host_ip: (\S+)/.exec(p)?.[1] ?? '0.0.0.0', target: Number(/target: (\d+)/.exec(p)![1]) };
    });
}

it('is secure by default: the worker verifies seals, the codec needs a token, and only the webhook bridge is published beyond loopback', async () => {
  const services = servicesOf((await compose(['config'], secrets)).stdout);
  const worker = services.get('worker')!;
  // The worker archives only what it verifies, against the CA the sandbox-token service fetched from the sandbox.
  expect(worker).toContain('ESIGN_SIGNATURE_VERIFICATION: require');
  expect(worker).toContain('ESIGN_TRUST_ANCHORS: /secrets/sandbox-ca.pem');
  // … made with one of the keys the sandbox publishes (any other certificate its CA issued is refused).
  expect(worker).toContain('ESIGN_SEAL_PINS_FILE: /secrets/seal-pins');
  expect(services.get('sandbox-token')).toMatch(/sandbox:4010\/sandbox\/pins[\s\S]*\/secrets\/seal-pins/);
  // … and keeps what it archived verifiable: the evidence upkeep re-time-stamps with the sandbox's TSA.
  expect(worker).toContain('ESIGN_EVIDENCE_TSA_URL: http://sandbox:4010/sandbox/tsa');
  expect(worker).toMatch(/ESIGN_REQUIRE_COMPLETION_CERTIFICATE: ["']true["']/);
  expect(services.get('sandbox-token')).toMatch(/sandbox:4010\/sandbox\/ca\.pem[\s\S]*\/secrets\/sandbox-ca\.pem/);
  // The codec decrypts payloads: a token on every request.
  expect(services.get('codec')).toContain(`ESIGN_CODEC_AUTH_TOKEN: ${secrets.ESIGN_CODEC_AUTH_TOKEN}`);
  // Every published port is on the host's loopback, but the bridge's (the provider must reach its webhooks).
  const published = [...services].flatMap(([name, block]) => publishedPorts(block).map((p) => ({ name, ...p })));
  expect(published.filter((p) => p.host !== '127.0.0.1')).toEqual([{ name: 'bridge', host: '0.0.0.0', target: 4020 }]);
  for (const name of ['temporal-frontend', 'codec', 'temporal-ui', 'worker', 'sandbox']) {
    expect(published.filter((p) => p.name === name).map((p) => p.host)).toEqual(['127.0.0.1']);
  }
  // Without the codec's token, it does not render.
  const withoutToken: Record<string, string> = { ...secrets };
  delete withoutToken.ESIGN_CODEC_AUTH_TOKEN;
  const refused = await compose(['config', '-q'], withoutToken);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('set ESIGN_CODEC_AUTH_TOKEN');
});

it('refuses to render without the secrets it needs', async () => {
  const missing = await compose(['config', '-q'], {});
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toMatch(/ESIGN_CODEC_KEYS|ESIGN_WEBHOOK_SECRET|SANDBOX_JWT_SECRET/);
});
