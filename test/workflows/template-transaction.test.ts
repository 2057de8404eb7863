// Transactions started from a template, end to end on the real Temporal dev server, the sandbox over HTTP and
// Chromium: the merge value is on the signing page and stamped into the signed, archived PDF; a request the
// template refuses, or a template that does not exist, never reaches Temporal or the provider; a worker without
// the template store fails the transaction with a typed, final failure before any upload.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalArchiveStore } from '../../src/archive/store.js';
import { startFromTemplate } from '../../src/client/templates.js';
import { esignCompletedSignal, issueSigningUrlUpdate, workflowIdFor } from '../../src/definitions/transaction.js';
import { FailureType } from '../../src/failures.js';
import {
  LocalTemplateStore,
  participantIdFor,
  TemplateInputError,
  TemplateNotFound,
  type StoredTemplate,
  type TemplateRequest,
} from '../../src/templates/index.js';
import { createEsignWorker } from '../../src/worker/create-worker.js';
import { launchChromium, signEveryTag } from '../support/browser.js';
import { completedWebhook, startEsignTestEnv, waitForPhase, type EsignTestEnv } from '../support/esign-env.js';
import { sandboxEvidencePolicy } from '../support/sandbox.js';
import { ndaTemplateFolder } from '../support/templates.js';
import { uniqueTaskQueue } from '../support/temporal.js';
import { pdfPageTexts, readZipEntries } from '../support/zip.js';

const COMPANY = 'Łódź Analytical Engines Sp. z o.o.';
let env: EsignTestEnv;
let store: LocalTemplateStore;
let nda: StoredTemplate;
let browser: Browser;

beforeAll(async () => {
  store = new LocalTemplateStore(await mkdtemp(join(tmpdir(), 'esign-templates-')));
  const { dir, definition } = await ndaTemplateFolder();
  nda = await store.create(definition, dir);
  env = await startEsignTestEnv({ deps: { templates: store } });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const request = (referenceId: string, overrides: Partial<TemplateRequest> = {}): TemplateRequest => ({
  referenceId,
  roles: {
    Employee: { name: 'Ada Lovelace', email: 'ada@example.com' },
    Manager: { name: 'Charles Babbage', email: 'charles@example.com' },
  },
  values: { company: COMPANY },
  ...overrides,
});

describe('a transaction from a template', () => {
  it('shows the merge value on the signing page, completes, archives verified, and has the value on the signed PDF', async () => {
    const referenceId = `tpl-${Date.now().toString(36)}`;
    const started = await startFromTemplate(env.temporal.client, store, 'NDA', request(referenceId), { taskQueue: env.taskQueue });
    expect(started.template).toBe('NDA@1');
    const status = await waitForPhase(started.handle, 'awaiting_signatures');
    const [employee, manager] = [participantIdFor(referenceId, 'Employee'), participantIdFor(referenceId, 'Manager')];
    expect(status.participants.map((p) => [p.id, p.name])).toEqual([
      [employee, 'Ada Lovelace'],
      [manager, 'Charles Babbage'],
    ]);

    // The employee signs in the browser: the company is on its tag before anything is clicked, and is what is applied.
    const { url } = await started.handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [employee] }] });
    const page = await browser.newPage({ viewport: { width: 1000, height: 1100 } });
    page.on('dialog', (dialog) => void dialog.accept(dialog.defaultValue()));
    await page.goto(url);
    await page.locator('body[data-pages-rendered="true"]').waitFor();
    const companyTag = page.locator(`button.tag[data-prefilled="${COMPANY}"]`);
    expect(await companyTag.textContent()).toBe(`* ${COMPANY}`);
    expect(await page.locator('button.tag[data-prefilled="2027-01-04"]').textContent()).toBe('* 2027-01-04');
    await signEveryTag(page);
    expect(await page.locator('button.tag.applied').allTextContents()).toContain(COMPANY);
    await page.close();
    await env.sandbox.control.signAs(status.transactionId!, manager);
    await started.handle.signal(esignCompletedSignal, completedWebhook({ transactionId: status.transactionId!, esignId: status.esignId! }));
    const result = await started.handle.result();

    expect(result.status).toBe('completed');
    // The archive holds the provider to the template's very documents, as for a caller's upload with its sha256.
    const templateHashes = nda.definition.documents.map((d) => d.sha256);
    expect(
      result.archive!.evidence!.documents.map((d) => [d.entry, d.originalSha256, d.providerOriginalSha256, d.signature.result]),
    ).toEqual([
      ['NDA.pdf', templateHashes[0], templateHashes[0], 'valid'],
      ['Annex.pdf', templateHashes[1], templateHashes[1], 'valid'],
    ]);
    const entries = await readZipEntries(fileURLToPath(result.archive!.uri));
    const [signedNda] = await pdfPageTexts(entries.get('NDA.pdf')!);
    expect(signedNda).toContain(COMPANY);
    expect(signedNda).toContain('2027-01-04');
    expect(signedNda).toContain('Ada Lovelace');
  });

  it('refuses a bad request or an unknown template before anything reaches Temporal or the provider', async () => {
    const before = await env.sandbox.control.stats();
    const refusals: [string, TemplateRequest | undefined, string, RegExp][] = [
      [
        'missing-role',
        { ...request('tpl-bad-1'), roles: { Employee: { name: 'Ada Lovelace', email: 'ada@example.com' } } },
        'NDA',
        /role "Manager" has no person/,
      ],
      [
        'unknown-role',
        { ...request('tpl-bad-2'), roles: { ...request('x').roles, Witness: { name: 'A B', email: 'ab@example.com' } } },
        'NDA',
        /"Witness" is not a role of NDA@1/,
      ],
      ['missing-value', { ...request('tpl-bad-3'), values: {} }, 'NDA', /value "company" \(Company name\) is missing/],
      [
        'unknown-value',
        { ...request('tpl-bad-4'), values: { company: 'Acme', colour: 'blue' } },
        'NDA',
        /"colour" is not a field of NDA@1/,
      ],
      ['not-found', request('tpl-bad-5'), 'NDA@2', /^template "NDA@2" not found: NDA has versions 1 to 1$/],
      ['not-found', request('tpl-bad-6'), 'Lease', /^template "Lease" not found: no template named Lease in file:\/\//],
    ];
    for (const [kind, req, ref, message] of refusals) {
      const err = await startFromTemplate(env.temporal.client, store, ref, req!, { taskQueue: env.taskQueue }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err, kind).toBeInstanceOf(kind === 'not-found' ? TemplateNotFound : TemplateInputError);
      expect(err!.message, kind).toMatch(message);
      if (err instanceof TemplateInputError) expect(err.problems.map((p) => p.kind)).toEqual([kind]);
      const described = await env.temporal.client.workflow
        .getHandle(workflowIdFor(req!.referenceId))
        .describe()
        .then(
          () => 'started',
          (e: unknown) => e,
        );
      expect(described, kind).toBeInstanceOf(WorkflowNotFoundError);
    }
    expect(await env.sandbox.control.stats()).toEqual(before);
  });

  it('fails for good, before any upload, on a worker without a template store', async () => {
    const taskQueue = uniqueTaskQueue('no-templates');
    const worker = await createEsignWorker({
      connection: env.temporal.nativeConnection,
      namespace: env.temporal.namespace,
      taskQueue,
      deps: {
        client: env.sandbox.client,
        archive: new LocalArchiveStore(env.archiveDir),
        evidence: sandboxEvidencePolicy(env.sandbox),
        minReconcileInterval: '1 second',
      },
    });
    const running = worker.run();
    try {
      const before = await env.sandbox.control.stats();
      const started = await startFromTemplate(env.temporal.client, store, 'NDA@1', request(`tpl-nostore-${Date.now().toString(36)}`), {
        taskQueue,
      });
      const err = await started.handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const failure = (err as WorkflowFailedError).cause?.cause;
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect((failure as ApplicationFailure).type).toBe(FailureType.StoreNotConfigured);
      expect((failure as ApplicationFailure).nonRetryable).toBe(true);
      expect((failure as ApplicationFailure).message).toBe(
        "documents[0] is a template's document, but this worker has no template store: set ESIGN_TEMPLATE_STORE to the store the template was created in",
      );
      expect(await env.sandbox.control.stats()).toEqual(before);
    } finally {
      worker.shutdown();
      await running;
    }
  });
});
