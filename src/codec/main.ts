// `npm run codec-server`: the remote codec endpoint for the Temporal Web UI and CLI.
import { pino } from 'pino';
import { aesGcmCodecOf } from './aes-gcm-codec.js';
import { orchestratorDataConverter } from './key-store-config.js';
import { codecConfigFromEnv } from './config.js';
import { buildCodecServer } from './server.js';

async function main(): Promise<void> {
  // Refuses, before anything is read, to serve decryption beyond loopback without a token, or with a weak one.
  const config = codecConfigFromEnv();
  const converter = orchestratorDataConverter();
  if (!converter) throw new Error('set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE');
  const codec = aesGcmCodecOf(converter.payloadCodecs)!;
  // A key store that is not there is said now, not at the first payload (ESIGN_KEY_STORE, docs/codec.md).
  await codec.dataKeys?.store();
  const app = await buildCodecServer({
    codec,
    corsOrigins: config.corsOrigins,
    tokens: config.tokens,
    // The audit trail of decryptions: token id, namespace, how many payloads; never their contents.
    audit: pino({ base: { component: 'codec-endpoint' }, level: process.env.LOG_LEVEL ?? 'info' }),
  });
  const url = await app.listen({ host: config.host, port: config.port });
  const access =
    config.tokens.length === 0
      ? 'open on loopback, no tokens'
      : `${config.tokens.length} token(s): ${config.tokens.map((t) => `${t.id} (${t.namespaces === '*' ? 'all namespaces' : t.namespaces.join('|')}${t.encode ? ', encode' : ''})`).join(', ')}`;
  process.stdout.write(`codec endpoint on ${url} (use it as the Web UI's codec endpoint; ${access})\n`);
}

main().catch((err: unknown) => {
  console.error(`codec server failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
