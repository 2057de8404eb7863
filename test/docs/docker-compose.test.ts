import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { cliTypeOf, esignSearchAttributes } from '../../src/definitions/search-attributes.js';

// No Docker engine runs here: the compose file is validated statically with
// Debian's docker-compose (installed by .ci/run), which needs no engine for `config`.
const root = fileURLToPath(new URL('../..', import.meta.url));
const secrets = {
  ESIGN_CODEC_KEYS: 'k1:AAAA',
  ESIGN_WEBHOOK_SECRET: 'whsec_AAAA',
  SANDBOX_JWT_SECRET: 'x'.repeat(40),
  SANDBOX_ADMIN_TOKEN: 'a'.repeat(40),
  ESIGN_CODEC_AUTH_TOKEN: 'c'.repeat(40),
  POSTGRES_PASSWORD: 'p'.repeat(40),
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
    'key-store',
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
  // Every entry point a service runs is in its image. The orchestrator's services run the JavaScript compiled in the
  // build stage (dist/, from sources it copies and tsconfig.build.json compiles), the worker's as the image's command;
  // only the sandbox, a test double with an image of its own (the `sandbox` stage), runs TypeScript through tsx.
  const copied = [...dockerfile.matchAll(/^COPY (\S+) \.\/\1$/gm)].map((m) => m[1]!);
  const compiledDirs = JSON.parse(/"include":\s*(\[[^\]]*\])/.exec(await readFile(`${root}/tsconfig.build.json`, 'utf8'))![1]!) as string[];
  const cmd = JSON.parse([...dockerfile.matchAll(/^CMD (\[.*\])$/gm)].at(-1)![1]!) as string[];
  const entries = [...[...resolved.matchAll(/- (\S+\.[jt]s)$/gm)].map((m) => m[1]!), cmd.at(-1)!];
  expect(entries.filter((entry) => entry.endsWith('.ts'))).toEqual(['packages/sandbox/src/main.ts']);
  expect(copied).toContain('packages/sandbox');
  const compiled = entries.filter((entry) => entry.endsWith('.js'));
  expect(compiled.sort()).toEqual(['dist/src/bridge/main.js', 'dist/src/cli/main.js', 'dist/src/codec/main.js', 'dist/src/worker/main.js']);
  for (const entry of compiled) {
    const source = entry.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    expect(existsSync(`${root}/${source}`), source).toBe(true);
    expect(compiledDirs.some((dir) => source.startsWith(`${dir}/`)) && copied.some((dir) => source.startsWith(`${dir}/`)), source).toBe(
      true,
    );
  }
  const sandbox = servicesOf(resolved).get('sandbox')!;
  expect(sandbox).toMatch(/\n {6}target: sandbox\n/);
  expect(dockerfile).toMatch(/^FROM build AS sandbox$/m);
  // The image (the last stage): production dependencies only, and nothing that compiles TypeScript.
  const image = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  expect(image).toContain('COPY --from=production-dependencies /app/node_modules ./node_modules');
  expect(/^FROM \S+ AS production-dependencies\n(?:.*\n)*?RUN npm ci --omit=dev /m.test(dockerfile)).toBe(true);
  expect(image).not.toMatch(/\btsx\b|typescript|\.ts\b|npm (?:ci|install)/);
  const manifest = JSON.parse(await readFile(`${root}/package.json`, 'utf8')) as { dependencies: Record<string, string> };
  expect(Object.keys(manifest.dependencies).filter((name) => ['tsx', 'typescript'].includes(name))).toEqual([]);
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
  expect(missing.stderr).toMatch(/set (?:ESIGN_CODEC_KEYS|ESIGN_WEBHOOK_SECRET|SANDBOX_JWT_SECRET|POSTGRES_PASSWORD), see .env.example/);
});

it('has no default password: every secret is required, and .env.example lists each one', async () => {
  const file = await readFile(`${root}/docker-compose.yml`, 'utf8');
  // No secret falls back to a value when unset (an empty optional list is not a secret).
  expect(file.match(/\$\{\w*(?:PASSWORD|SECRET|TOKEN|KEYS?)\w*:?-[^}]+\}/g) ?? []).toEqual([]);
  const required = [...new Set([...file.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]!))].sort();
  expect(required).toEqual([
    'ESIGN_CODEC_AUTH_TOKEN',
    'ESIGN_CODEC_KEYS',
    'ESIGN_WEBHOOK_SECRET',
    'POSTGRES_PASSWORD',
    'SANDBOX_ADMIN_TOKEN',
    'SANDBOX_JWT_SECRET',
  ]);
  // PostgreSQL's password used to default to "temporal".
  const withoutPassword: Record<string, string> = { ...secrets };
  delete withoutPassword.POSTGRES_PASSWORD;
  const refused = await compose(['config', '-q'], withoutPassword);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('set POSTGRES_PASSWORD');
  // .env.example names every required variable, each with a placeholder the services refuse (test/bridge-hardening, test/codec).
  const example = Object.fromEntries(
    (await readFile(`${root}/.env.example`, 'utf8'))
      .split('\n')
      .filter((line) => /^\w+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  expect(Object.keys(example).sort()).toEqual(required);
  for (const value of Object.values(example)) expect(value).toMatch(/REPLACE/);
});

it('is hardened: no capabilities, no privilege gain, read-only root file systems, internal ports unpublished, secrets 0600', async () => {
  const services = servicesOf((await compose(['config'], secrets)).stdout);
  const list = (block: string, key: string) =>
    (new RegExp(`\\n {4}${key}:\\n((?: {4}- .*\\n?)+)`).exec(block)?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/^\s*- /, '').trim())
      .filter(Boolean);
  for (const [name, block] of services) {
    expect({ name, cap_drop: list(block, 'cap_drop') }).toEqual({ name, cap_drop: ['ALL'] });
    expect({ name, security_opt: list(block, 'security_opt') }).toEqual({ name, security_opt: ['no-new-privileges:true'] });
    expect({ name, privileged: /\n {4}privileged: true/.test(block) }).toEqual({ name, privileged: false });
  }
  // PostgreSQL's entrypoint hands its data directory to the postgres user: those capabilities and no others.
  expect(list(services.get('postgresql')!, 'cap_add')).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID']);
  for (const [name, block] of services)
    if (name !== 'postgresql') expect({ name, cap_add: list(block, 'cap_add') }).toEqual({ name, cap_add: [] });
  // The orchestrator's services and PostgreSQL: read-only root, a tmpfs /tmp, data on volumes.
  for (const name of ['codec', 'sandbox', 'sandbox-token', 'bridge', 'worker', 'postgresql']) {
    const block = services.get(name)!;
    expect({ name, readOnly: /\n {4}read_only: true/.test(block) }).toEqual({ name, readOnly: true });
    expect(list(block, 'tmpfs')).toContain('/tmp');
  }
  // The bridge: only the webhook port is published; readiness and metrics stay inside the container.
  const bridge = services.get('bridge')!;
  expect(publishedPorts(bridge).map((p) => p.target)).toEqual([4020]);
  expect(bridge).toContain('BRIDGE_INTERNAL_HOST: 127.0.0.1');
  expect(bridge).toMatch(/BRIDGE_INTERNAL_PORT: ['"]?4021['"]?/);
  expect(bridge).toContain('http://127.0.0.1:4021/readyz');
  expect(bridge).not.toContain(':4020/readyz');
  expect(bridge).toContain('BRIDGE_REPLAY_STORE: /data/bridge/replay.sqlite');
  // The codec's health check answers without the token.
  expect(services.get('codec')).toContain('http://127.0.0.1:4030/healthz');
  // Secrets on the shared volume: written 0600 by the image's user (not root), whom the bridge and the worker run as.
  const token = services.get('sandbox-token')!;
  expect(token).not.toMatch(/\n {4}user: /);
  expect(token).toContain('mode:0o600');
  expect(token).not.toMatch(/0o6[4-7][4-7]/);
  expect(token.match(/\bw\('\/secrets\//g)).toHaveLength(3);
  for (const [name, block] of services) expect({ name, user: /\n {4}user: (?:root|0)\b/.test(block) }).toEqual({ name, user: false });
  // The image: data and secrets directories the node user's alone, and it runs as that user.
  const dockerfile = await readFile(`${root}/Dockerfile`, 'utf8');
  expect(dockerfile).toMatch(/install -d -o node -g node -m 0700 [^\n]*\/secrets/);
  for (const dir of ['/data/sandbox', '/data/archive', '/data/documents', '/data/bridge']) expect(dockerfile).toContain(dir);
  expect(
    dockerfile
      .trimEnd()
      .split('\n')
      .filter((l) => l.startsWith('USER '))
      .at(-1),
  ).toBe('USER node');
});
