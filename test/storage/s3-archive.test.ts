import { createHash } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { S3ArchiveStore } from '../../src/archive/s3-store.js';
import { esignCompletedSignal, statusQuery } from '../../src/definitions/transaction.js';
import { completedWebhook, startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';
import { startS3 } from '../support/s3.js';

let s3: Awaited<ReturnType<typeof startS3>>;
let env: EsignTestEnv;
beforeAll(async () => {
  s3 = await startS3('signed-documents');
  env = await startEsignTestEnv({
    deps: { archive: new S3ArchiveStore({ client: s3.client, bucket: 'signed-documents', prefix: 'esign' }) },
  });
});
afterAll(async () => {
  await env?.close();
  await s3?.close();
});

it('archives the completed ZIP and its manifest to S3-compatible storage', async () => {
  const { handle } = await env.start(env.input({ archivePrefix: 'tenant-7' }));
  let status = await handle.query(statusQuery);
  await expect.poll(async () => (status = await handle.query(statusQuery)).phase, { timeout: 30_000 }).toBe('awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  await handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
  const result = await handle.result();

  const key = `esign/tenant-7/${status.transactionId}/completed.zip`;
  expect(result.archive?.uri).toBe(`s3://signed-documents/${key}`);
  const object = await s3.client.send(new GetObjectCommand({ Bucket: 'signed-documents', Key: key }));
  const bytes = Buffer.from(await object.Body!.transformToByteArray());
  expect(createHash('sha256').update(bytes).digest('hex')).toBe((await env.sandbox.control.inspect(status.transactionId!))?.zip?.sha256);
  const manifest = await s3.client.send(
    new GetObjectCommand({ Bucket: 'signed-documents', Key: key.replace('completed.zip', 'manifest.json') }),
  );
  expect(JSON.parse(await manifest.Body!.transformToString())).toMatchObject({
    transactionId: status.transactionId,
    zip: { sha256: result.archive?.sha256 },
  });

  // Committing again (a retry, a replay) returns the archive that exists.
  const store = new S3ArchiveStore({ client: s3.client, bucket: 'signed-documents', prefix: 'esign' });
  const again = await store.commit(`tenant-7/${status.transactionId}`, '/nonexistent.zip', {} as never);
  expect(again.manifest.zip.sha256).toBe(result.archive?.sha256);
});
