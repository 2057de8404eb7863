// The chaos run's bulk send (docs/bulk-send.md): once in the run, one batch of B rows is submitted, then
// submitted again, and its transactions are signed as they become signable, while the schedule's kills,
// restarts and deploy go on. ./bulk-checks.ts judges it afterwards; its transactions also go through the
// per-transaction checks of ./checks.ts.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sendBulk, type BulkSendRequest } from '../src/client/bulk.js';
import { getEsignTransaction } from '../src/client/transactions.js';
import { rowReferenceId, type BatchResult } from '../src/definitions/bulk.js';
import type { EsignTransactionResult } from '../src/definitions/transaction.js';
import type { EsignClient } from '../src/esign/client.js';
import type { SandboxControlClient } from '../src/client/sandbox-control.js';
import { samplePdf } from '../src/cli/sample-pdf.js';
import { LocalObjectStore } from '../src/storage/object-store.js';
import { LocalTemplateStore } from '../src/templates/index.js';
import { NDA_DEFINITION, ndaCsv } from '../test/support/nda-template.js';
import { checkBatch, type BatchChecks, type BatchRun } from './bulk-checks.js';
import type { ChaosChecks } from './checks.js';
import { ignoreEnded, type Retrying } from './client-calls.js';
import type { Scenario } from './schedule.js';
import type { RollingDeploy } from './workers.js';

/** The run's parts the batch uses. */
export interface ChaosSystem {
  client: Client;
  provider: EsignClient;
  control: SandboxControlClient;
  taskQueue: string;
  seed: number;
  retrying: Retrying;
  /** No wait lasts beyond this (epoch milliseconds). */
  deadline: number;
  log: (line: string) => void;
}

export interface BatchOptions {
  /** The workers' ESIGN_TEMPLATE_STORE: the template and the batch's files. */
  storeDir: string;
  rows: number;
  /** The integrator's endpoint, as the driven transactions have. */
  callbackUrl: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ChaosBatch {
  readonly stores: { templates: LocalTemplateStore; objects: LocalObjectStore };
  readonly #o: ChaosSystem & BatchOptions;
  #submitted?: Omit<BatchRun, 'result' | 'seconds'> & { at: number; signer: { stop(): Promise<void> } };
  #run?: BatchRun;
  #rowResults = new Map<string, EsignTransactionResult | Error>();

  private constructor(o: ChaosSystem & BatchOptions) {
    this.#o = o;
    this.stores = { templates: new LocalTemplateStore(o.storeDir), objects: new LocalObjectStore(o.storeDir) };
  }

  /** Creates the batch's template in the store, before any worker needs it. */
  static async create(system: ChaosSystem, o: BatchOptions): Promise<ChaosBatch> {
    const batch = new ChaosBatch({ ...system, ...o });
    // Beside the store, as a template author's files would be.
    const definitionDir = join(o.storeDir, '..', 'nda-template');
    await mkdir(definitionDir, { recursive: true });
    await writeFile(join(definitionDir, 'nda.pdf'), await samplePdf('Non-disclosure agreement under chaos'));
    await batch.stores.templates.create(structuredClone(NDA_DEFINITION) as never, definitionDir);
    return batch;
  }

  /** What the rows' references start with: none before the batch was submitted. */
  get referencePrefixes(): string[] {
    return this.#submitted ? [`${this.#submitted.batchId}.`] : [];
  }

  /** A row's transaction's participants (one: the template has one role); undefined for a transaction not the batch's. */
  participantsOf(referenceId: string): number | undefined {
    return this.#rowResults.has(referenceId) ? NDA_DEFINITION.roles.length : undefined;
  }

  /** Submits the batch twice and starts signing it; returns once both submissions have answered. */
  async submit(startedSoFar: number): Promise<void> {
    const { client, retrying, rows, seed, taskQueue } = this.#o;
    const request: BulkSendRequest = {
      name: `Chaos ${seed}`,
      template: NDA_DEFINITION.name,
      csv: ndaCsv(rows),
      maxInFlight: 5,
      reconcileInterval: '1 second',
      callbackUrl: this.#o.callbackUrl,
      taskQueue,
    };
    // Epoch time, as the server's close time is: the local server shares this machine's clock.
    const at = Date.now();
    let firstAttempts = 0;
    const send = () => client.withDeadline(Date.now() + 10_000, () => sendBulk(client, this.stores, request));
    const first = await retrying('batch submit', () => {
      firstAttempts++;
      return send();
    });
    const second = await retrying('batch submit', send);
    const signer = this.#signer(first.batchId);
    this.#submitted = {
      batchId: first.batchId,
      rows,
      submittedAfter: startedSoFar,
      existing: [first.existing, second.existing],
      firstAttempts,
      at,
      signer,
    };
    this.#o.log(`chaos: batch ${first.batchId} of ${rows} rows submitted (again: ${second.existing ? 'found' : 'STARTED AGAIN'})`);
  }

  /** Waits for the batch's result, then stops signing. */
  async finish(): Promise<void> {
    if (!this.#submitted) return;
    const { client, retrying, deadline } = this.#o;
    const { at, signer, ...submitted } = this.#submitted;
    const handle = client.workflow.getHandle(submitted.batchId);
    const result = await retrying('batch result', () =>
      client
        .withDeadline(deadline, () => handle.result() as Promise<BatchResult>)
        .catch((err: unknown) => {
          if (err instanceof WorkflowFailedError) return new Error(`the batch workflow failed: ${err.cause?.message ?? err.message}`);
          throw err;
        }),
    ).catch((err: unknown) => new Error(`no result from the batch workflow: ${(err as Error).message}`));
    // Asked for once the drivers are done, long after the batch may have ended.
    const closed = await handle.describe().then(
      (d) => d.closeTime?.getTime(),
      () => undefined,
    );
    await signer.stop();
    this.#run = { ...submitted, result, seconds: ((closed ?? Date.now()) - at) / 1000 };
    const ended = result instanceof Error ? result.message : result.phase;
    this.#o.log(`chaos: batch ${submitted.batchId} ${ended}, closed ${this.#run.seconds.toFixed(1)} s after its submission`);
  }

  /**
   * Adds each row's transaction's result (or why there is none) to the driven ones', for the per-transaction checks
   * (./checks.ts): each is to be signed, like a driven transaction of the `sign` scenario.
   */
  async addResults(results: Map<string, EsignTransactionResult | Error>, planned: Map<string, Scenario>): Promise<void> {
    if (!this.#submitted) return;
    const { batchId, rows } = this.#submitted;
    for (let line = 2; line < rows + 2; line++) {
      const referenceId = rowReferenceId(batchId, line);
      const handle = getEsignTransaction(this.#o.client, referenceId);
      const result = await this.#o.retrying('batch row result', async () => {
        try {
          // Asked only of an ended workflow: a result call would wait for one still running.
          const { status } = await handle.describe();
          if (status.name === 'RUNNING') return new Error(`row ${line}: its transaction is still running after the batch ended`);
          return await handle.result();
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return new Error(`row ${line}: no transaction workflow`);
          if (err instanceof WorkflowFailedError) return new Error(`row ${line}: workflow failed: ${err.cause?.message ?? err.message}`);
          throw err;
        }
      });
      this.#rowResults.set(referenceId, result);
      results.set(referenceId, result);
      planned.set(referenceId, 'sign');
    }
  }

  /** The batch's own checks (./bulk-checks.ts), their problems added to the run's; undefined when it was never submitted. */
  async check(archiveDir: string, deploy: RollingDeploy, checks: ChaosChecks): Promise<BatchChecks | undefined> {
    if (!this.#run) {
      checks.problems.push('the bulk-send batch was never submitted');
      return undefined;
    }
    const { client, provider } = this.#o;
    const { problems, activityRetries } = checks;
    return checkBatch({ run: this.#run, client, provider, objects: this.stores.objects, archiveDir, deploy, activityRetries, problems });
  }

  /** Signs, as the signer would, every pending provider transaction of the batch until stopped. */
  #signer(batchId: string): { stop(): Promise<void> } {
    const { provider, control, retrying, log } = this.#o;
    const signed = new Set<string>();
    let stopped = false;
    const signOnce = async () => {
      const pending: { id: string; participants: string[] }[] = [];
      for (let offset = 0; ; offset += 500) {
        const page = await retrying('batch list', () => provider.listTransactions({ status: 'esign_pending', limit: 500, offset }));
        for (const t of page.data) {
          if (!t.referenceId?.startsWith(`${batchId}.`) || signed.has(t.id)) continue;
          pending.push({ id: t.id, participants: t.participants.filter((p) => p.status !== 'signed').map((p) => p.id) });
        }
        if (page.data.length < 500) break;
      }
      for (const t of pending) {
        for (const participant of t.participants) await retrying('batch sign', () => ignoreEnded(() => control.signAs(t.id, participant)));
        signed.add(t.id);
      }
    };
    const loop = (async () => {
      // On after one per row is signed: a row's duplicate, were there one, may be the transaction its workflow waits for.
      while (!stopped) {
        await signOnce().catch((err: unknown) => {
          // Past the run's deadline: the checks find the rows left unsigned.
          log(`chaos: the batch's signer gave up: ${(err as Error).message}`);
          stopped = true;
        });
        await sleep(500);
      }
    })();
    return {
      stop() {
        stopped = true;
        return loop;
      },
    };
  }
}
