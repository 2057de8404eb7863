/**
 * Which template store a process uses: ESIGN_TEMPLATE_STORE, a directory or `s3://bucket/prefix`. An S3 store
 * takes the archive's endpoint and region (ESIGN_ARCHIVE_S3_ENDPOINT, ESIGN_ARCHIVE_S3_REGION) and the AWS
 * default credential chain, so one set of S3 settings serves both.
 */
import { z } from 'zod';
import { s3Client } from '../archive/s3-store.js';
import { parseEnv } from '../util/env.js';
import { LocalTemplateStore } from './local.js';
import { S3TemplateStore } from './s3.js';
import type { TemplateStore } from './store.js';

const S3_URL = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/;

export const TemplateStoreEnv = z.object({
  // Empty means unset, as for the other list and path settings.
  ESIGN_TEMPLATE_STORE: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .trim()
      .refine((v) => !v.startsWith('s3:') || S3_URL.test(v), 'must be a directory or s3://bucket/prefix')
      .optional(),
  ),
  ESIGN_ARCHIVE_S3_ENDPOINT: z.url().optional(),
  ESIGN_ARCHIVE_S3_REGION: z.string().default('us-east-1'),
});

/** Where the store is and how to reach it: plain data a configuration can carry. */
export interface TemplateStoreSetting {
  location: string;
  s3: { region: string; endpoint: string | undefined };
}

export function templateStoreSetting(env: NodeJS.ProcessEnv): TemplateStoreSetting | undefined {
  const e = parseEnv(TemplateStoreEnv, env, 'template store');
  if (!e.ESIGN_TEMPLATE_STORE) return undefined;
  return { location: e.ESIGN_TEMPLATE_STORE, s3: { region: e.ESIGN_ARCHIVE_S3_REGION, endpoint: e.ESIGN_ARCHIVE_S3_ENDPOINT } };
}

export function templateStoreAt(setting: TemplateStoreSetting): TemplateStore {
  const s3 = S3_URL.exec(setting.location);
  if (!s3) return new LocalTemplateStore(setting.location);
  return new S3TemplateStore({ client: s3Client(setting.s3), bucket: s3[1]!, prefix: s3[2] ?? '' });
}

/** The store ESIGN_TEMPLATE_STORE names, or undefined when it is unset. */
export function templateStoreFromEnv(env: NodeJS.ProcessEnv): TemplateStore | undefined {
  const setting = templateStoreSetting(env);
  return setting ? templateStoreAt(setting) : undefined;
}
