import type { Client } from '@temporalio/client';
import { startEsignTransaction } from '../src/client/transactions.js';
import { benchSigner } from './stack.js';

export interface TransactionTarget {
  client: Client;
  taskQueue: string;
  /** A PDF inside the workers' document root. */
  pdf: string;
  /** Signs as a participant through the sandbox (it then sends the webhook). */
  sign: (transactionId: string, participantId: string) => Promise<void>;
}

/**
 * One whole transaction, as the e2e scenarios measure it: start with the
 * signer's URL (update-with-start), sign in the sandbox, and wait for the
 * webhook-driven completion and archive. Records start→archived and
 * signed(webhook)→archived in milliseconds; returns the provider's transaction id.
 */
export async function benchTransaction(
  target: TransactionTarget,
  referenceId: string,
  startToArchived: number[],
  webhookToArchived: number[],
): Promise<string> {
  const t0 = performance.now();
  const { handle, transactionId, participantId } = await startWithSigningUrl(target, referenceId);
  await target.sign(transactionId, participantId);
  const signed = performance.now();
  const result = await handle.result();
  if (result.status !== 'completed') throw new Error(`transaction ${referenceId} ended ${result.status}`);
  const done = performance.now();
  startToArchived.push(done - t0);
  webhookToArchived.push(done - signed);
  return transactionId;
}

/** A one-signer transaction started with its signer's URL in the same call (update-with-start), as a backend would. */
export async function startWithSigningUrl(target: Pick<TransactionTarget, 'client' | 'taskQueue' | 'pdf'>, referenceId: string) {
  const participantId = crypto.randomUUID();
  const { handle, transactionId } = await startEsignTransaction(
    target.client,
    {
      referenceId,
      documents: [
        {
          title: 'Agreement',
          source: { path: target.pdf },
          tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
        },
      ],
      participants: [benchSigner(participantId)],
      notifyParticipants: { email: false },
      reconcileInterval: '1 hour',
    },
    { taskQueue: target.taskQueue, signingUrlFor: { participantIds: [participantId] } },
  );
  return { handle, transactionId: transactionId!, participantId };
}
