// `npm run codec-server`: the remote codec endpoint for the Temporal Web UI and CLI.
import { parseEnv, splitList } from '../util/env.js';
import { AesGcmCodec, parseCodecKeys } from './aes-gcm-codec.js';
import { codecKeysFromEnv } from './data-converter.js';
import { CodecEnv } from './config.js';
import { buildCodecServer } from './server.js';

async function main(): Promise<void> {
  const env = parseEnv(CodecEnv, process.env, 'codec endpoint');
  const keys = codecKeysFromEnv();
  if (!keys) throw new Error('set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE');
  const app = await buildCodecServer({
    codec: new AesGcmCodec(parseCodecKeys(keys)),
    corsOrigins: splitList(env.ESIGN_CODEC_CORS_ORIGINS),
    ...(env.ESIGN_CODEC_AUTH_TOKEN ? { authToken: env.ESIGN_CODEC_AUTH_TOKEN } : {}),
  });
  const url = await app.listen({ host: env.ESIGN_CODEC_HOST, port: env.ESIGN_CODEC_PORT });
  process.stdout.write(`codec endpoint on ${url} (use it as the Web UI's codec endpoint)\n`);
}

main().catch((err: unknown) => {
  console.error(`codec server failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
