import { z } from 'zod';

/** Settings of the remote codec endpoint. */
export const CodecEnv = z.object({
  ESIGN_CODEC_HOST: z.string().default('127.0.0.1'),
  ESIGN_CODEC_PORT: z.coerce.number().int().min(0).max(65535).default(4030),
  ESIGN_CODEC_CORS_ORIGINS: z.string().default('http://localhost:8233,http://127.0.0.1:8233'),
  ESIGN_CODEC_AUTH_TOKEN: z.string().min(16).optional(),
});
