// The production topology, for real: PostgreSQL and the Temporal server's
// frontend, history, matching and internal-worker services as separate
// processes (deploy/temporal/config.yaml), two workers, two bridges behind a
// balancer, the sandbox. A transaction runs end to end; the faults only a
// cluster has (each service, PostgreSQL, workers and bridges killed) are the
// cluster chaos run's (./chaos.test.ts), with its seeded schedule and checks.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTopology, type Topology } from '../../tools/cluster/topology.js';
import { dataConverterFromEnv } from '../../src/codec/data-converter.js';
import { getEsignTransaction, startEsignTransaction } from '../../src/client/transactions.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { statusQuery, type EsignTransactionStatus } from '../../src/definitions/transaction.js';

let topology: Topology;
let client: Client;

beforeAll(async () => {
  topology = await startTopology({ workDir: await mkdtemp(join(tmpdir(), 'esign-cluster-')) });
  const connection = await Connection.connect({ address: topology.address });
  client = new Client({
    connection,
    namespace: topology.namespace,
    dataConverter: dataConverterFromEnv({ ESIGN_CODEC_KEYS: topology.codecKeys })!,
  });
});
afterAll(async () => {
  await client?.connection.close();
  await topology?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function input(referenceId: string, reconcileInterval = '1 hour'): EsignTransactionInput {
  return {
    referenceId,
    documents: [
      {
        title: 'Agreement',
        source: { path: join(topology.documentsDir, 'agreement.pdf') },
        tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, page: 0, signerIndex: 0 }],
      },
    ],
    participants: [
      { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', authenticationType: 'none', twoFactorContact: 'email' },
    ],
    notifyParticipants: { email: false },
    reconcileInterval,
  };
}

/** Retries through the moments a service is down, as an integrator's backend would. */
async function eventually<T>(fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(500);
    }
  }
}

async function awaitingSignatures(referenceId: string): Promise<EsignTransactionStatus> {
  return eventually(async () => {
    const s = await getEsignTransaction(client, referenceId).query(statusQuery);
    if (s.phase !== 'awaiting_signatures') throw new Error(`still ${s.phase}`);
    return s;
  });
}

async function signAll(status: EsignTransactionStatus): Promise<void> {
  for (const p of status.participants) await eventually(() => topology.sandbox.control.signAs(status.transactionId!, p.id));
}

describe('the production topology', () => {
  it('runs a transaction end to end: the webhook goes through the balancer and a bridge, the ZIP is verified and archived once', async () => {
    const referenceId = `cluster-e2e-${Date.now()}`;
    await startEsignTransaction(client, input(referenceId), { taskQueue: topology.taskQueue });
    const status = await awaitingSignatures(referenceId);
    await signAll(status);
    // Reconciliation is an hour away: only the webhook can finish it this soon.
    const result = await getEsignTransaction(client, referenceId).result();
    expect(result.status).toBe('completed');
    expect(result.archive?.evidence?.documents[0]?.signature).toMatchObject({ result: 'valid', trusted: true });
    // The sandbox records the bridge's 2xx once the response is back, which may be after the workflow finished.
    await eventually(async () => {
      const deliveries = await topology.sandbox.control.deliveries({ transactionId: status.transactionId! });
      if (!deliveries.some((d) => d.status === 'delivered' && d.payload.includes('esign-completed'))) throw new Error('not delivered yet');
    });
    // Visibility on PostgreSQL answers the operators' queries by the custom search attributes.
    await eventually(async () => {
      const found = [];
      for await (const wf of client.workflow.list({ query: `EsignReferenceId = '${referenceId}' AND EsignStatus = 'completed'` }))
        found.push(wf);
      if (found.length !== 1) throw new Error(`found ${found.length}`);
    });
  });
});
