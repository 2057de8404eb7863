// Issue 38's done-when, through a real worker, sandbox and Temporal server: a transaction whose document carries a
// signature field the caller planted (its certificate naming AIA caIssuers, OCSP and CRL URLs of a local listener,
// standing in for an internal service) is signed, completed and sealed by the sandbox, and judged by the worker
// under `require`, and not one request reaches the listener.
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { statusQuery } from '../../src/definitions/transaction.js';
import { eventually } from '../support/eventually.js';
import { startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { listener, plantedPdf, plantedPki, type Listener } from '../support/planted-signature.js';

let env: EsignTestEnv | undefined;
let l: Listener | undefined;
afterEach(async () => {
  await env?.close();
  await l?.close();
  env = undefined;
  l = undefined;
});

it('a document carrying a planted signature completes with no request leaving for the URLs its certificates name', async () => {
  l = await listener();
  const planted = plantedPki(l.url);
  env = await startEsignTestEnv();
  const path = join(dirname(env.pdfs[0]!), 'planted.pdf');
  await writeFile(path, await plantedPdf(planted.signer));
  const { handle } = await env.start(
    env.input({
      reconcileInterval: '1 second',
      documents: [
        {
          title: 'Planted contract',
          source: { path },
          tags: [
            { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 },
            { type: 'SIGNATURETEMPLATE', x: 330, y: 120, width: 200, height: 30, page: 0, signerIndex: 1 },
          ],
        },
      ],
    }),
  );
  const status = await waitForPhase(handle, 'awaiting_signatures');
  for (const p of status.participants) await env.sandbox.control.signAs(status.transactionId!, p.id);
  // Completed by the provider, sealed, downloaded and judged by the worker: whatever the verdict, it is reached.
  const judged = await eventually(
    'the completed ZIP judged',
    async () => {
      const s = await handle.query(statusQuery);
      return (s.phase === 'completed' || s.phase === 'archive_invalid') && s;
    },
    60_000,
    250,
  );
  expect(l.requests).toEqual([]);
  expect(l.connections).toBe(0);
  // The archive refuses the file (the sandbox's rewrite leaves the planted /ByteRange framing nothing), which is the
  // archive's business; what matters here is that judging it asked nothing either.
  if (judged.phase === 'archive_invalid') expect(judged.archiveProblem).toMatch(/ByteRange|signature/);
}, 120_000);
