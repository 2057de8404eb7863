// `npm run codec-server`: the remote codec endpoint for the Temporal Web UI and CLI.
import { describeIssues } from '../esign/schemas.js';
import { AesGcmCodec, parseCodecKeys } from './aes-gcm-codec.js';
import { codecKeysFromEnv } from './data-converter.js';
import { CodecEnv } from './config.js';
import { buildCodecServer } from './server.js';

async function main(): Promise<void> {
  const parsed = CodecEnv.safeParse(process.env);
  if (!parsed.success) throw new Error(`invalid configuration: ${describeIssues(parsed.error)}`);
  const keys = codecKeysFromEnv();
  if (!keys) throw new Error('set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE');
  const app = await buildCodecServer({
    codec: new AesGcmCodec(parseCodecKeys(keys)),
    corsOrigins: parsed.data.ESIGN_CODEC_CORS_ORIGINS.split(',').map((s) => s.trim()),
    ...(parsed.data.ESIGN_CODEC_AUTH_TOKEN ? { authToken: parsed.data.ESIGN_CODEC_AUTH_TOKEN } : {}),
  });
  const url = await app.listen({ host: parsed.data.ESIGN_CODEC_HOST, port: parsed.data.ESIGN_CODEC_PORT });
  process.stdout.write(`codec endpoint on ${url} (use it as the Web UI's codec endpoint)\n`);
}

main().catch((err: unknown) => {
  console.error(`codec server failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
