// Every bad input is refused at the start, with a message naming what is wrong,
// and nothing reaches the provider: no upload, no transaction.
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidTransactionInput } from '../../src/client/transactions.js';
import { WORKFLOW_TYPE } from '../../src/definitions/transaction.js';
import type { esignTransaction } from '../../workflows/esign-transaction.js';
import type { EsignTransactionInput } from '../../src/transaction/input.js';
import { startEsignTestEnv, type EsignTestEnv } from '../support/esign-env.js';

const MAX_DOCUMENT_BYTES = 256 * 1024;
let env: EsignTestEnv;

beforeAll(async () => {
  env = await startEsignTestEnv({ deps: { maxDocumentBytes: MAX_DOCUMENT_BYTES, allowedUrls: ['https://docs.example.com'] } });
});
afterAll(() => env?.close());

/** The provider's view: how many documents were uploaded and transactions created. */
function providerState(): Promise<{ uploads: number; transactions: number }> {
  return env.sandbox.control.stats();
}

function failureMessage(err: unknown): string {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  return `${cause?.message ?? ''} ${(cause?.cause as Error | undefined)?.message ?? ''}`;
}

/** Starts without the client helper's checks (another SDK, the CLI, `temporal workflow start`), so the workflow itself must refuse. */
async function startRaw(input: unknown) {
  return env.temporal.client.workflow.start<typeof esignTransaction>(WORKFLOW_TYPE, {
    taskQueue: env.taskQueue,
    workflowId: `esign-bad-${crypto.randomUUID()}`,
    args: [input as EsignTransactionInput],
  });
}

describe('invalid workflow input', () => {
  const cases: [string, (i: EsignTransactionInput) => unknown, RegExp][] = [
    ['referenceId with personal data', (i) => ({ ...i, referenceId: 'jane.doe@example.com' }), /referenceId/],
    ['no documents', (i) => ({ ...i, documents: [] }), /documents: at least one document/],
    ['no participants', (i) => ({ ...i, participants: [] }), /participants: at least one participant/],
    [
      'participant without e-mail',
      (i) => ({ ...i, participants: [{ ...i.participants[0], email: 'not-an-email' }] }),
      /participants\[0\]\.email/,
    ],
    [
      'duplicate participant ids',
      (i) => ({
        ...i,
        participants: [
          { ...i.participants[0], id: 'p' },
          { ...i.participants[0], id: 'p' },
        ],
      }),
      /participants\[1\]\.id: duplicate/,
    ],
    [
      'tag for a participant that does not exist',
      (i) => ({ ...i, documents: [{ ...i.documents[0], tags: [{ ...i.documents[0]!.tags![0], signerIndex: 7 }] }] }),
      /documents\[0\]\.tags\[0\]\.signerIndex/,
    ],
    [
      'document source of two kinds',
      (i) => ({ ...i, documents: [{ ...i.documents[0], source: { path: '/x.pdf', url: 'https://docs.example.com/x.pdf' } }] }),
      /documents\[0\]\.source/,
    ],
    ['callback URL that is not http(s)', (i) => ({ ...i, callbackUrl: 'file:///etc/passwd' }), /callbackUrl/],
    ['signing deadline that is not a duration', (i) => ({ ...i, signingDeadline: 'next tuesday' }), /signingDeadline/],
    ['e-mail subject over 255 characters', (i) => ({ ...i, emailSubject: 'x'.repeat(300) }), /emailSubject/],
    ['not an object at all', () => 'hello', /expected object/],
  ];

  it.each(cases)(
    'refuses %s in the client and in the workflow, naming the field, before any provider call',
    async (_name, mutate, names) => {
      const before = await providerState();
      const input = mutate(env.input());
      await expect(env.start(input as EsignTransactionInput)).rejects.toThrow(InvalidTransactionInput);
      await expect(env.start(input as EsignTransactionInput)).rejects.toThrow(names);

      const handle = await startRaw(input);
      const err = await handle.result().catch((e: unknown) => e);
      expect(failureMessage(err)).toMatch(names);
      expect(failureMessage(err)).toMatch(/invalid input/);
      expect(await providerState()).toEqual(before);
    },
  );
});

describe('documents that are not acceptable PDFs', () => {
  const files: [string, Buffer | string, RegExp][] = [
    ['not a PDF', 'PK\u0003\u0004 this is a ZIP, not a PDF', /documents\[0\] is not a PDF/],
    ['empty', Buffer.alloc(0), /documents\[0\] is empty/],
    ['oversized', Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(MAX_DOCUMENT_BYTES)]), /is \d+ bytes, over the 262144-byte limit/],
  ];

  it.each(files)(
    'fails a %s document non-retryably, with a clear message, no upload and no provider transaction',
    async (name, content, message) => {
      const path = join(dirname(env.pdfs[0]!), `${name.replace(/\W+/g, '-')}-${crypto.randomUUID()}.pdf`);
      await writeFile(path, content);
      const before = await providerState();
      const input = env.input();
      input.documents[0]!.source = { path };
      const { handle } = await env.start(input);
      const err = await handle.result().catch((e: unknown) => e);
      expect(failureMessage(err)).toMatch(message);
      // One attempt: a bad document is not retried.
      const history = await handle.fetchHistory();
      const started = history.events!.filter((e) => e.activityTaskStartedEventAttributes);
      expect(started.map((e) => e.activityTaskStartedEventAttributes!.attempt)).toEqual([1]);
      expect(await providerState()).toEqual(before);
    },
  );

  it('fails a callback URL off the allow-list in input validation, before any activity is scheduled', async () => {
    const before = await providerState();
    const { handle } = await env.start(env.input({ callbackUrl: 'https://attacker.example.net/hook' }));
    const err = await handle.result().catch((e: unknown) => e);
    expect(failureMessage(err)).toMatch(/callbackUrl https:\/\/attacker\.example\.net is not on the allow-list/);
    expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'UrlNotAllowed' });
    const history = await handle.fetchHistory();
    expect(history.events!.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(await providerState()).toEqual(before);
  });

  it('refuses a document the caller uploaded without its hash when the worker archives only what it verifies', async () => {
    const before = await providerState();
    const base = env.input();
    const { handle } = await env.start({
      ...base,
      documents: [{ ...base.documents[0]!, source: { storagePath: 'uploaded/by-the-caller.pdf' } }],
    });
    const err = await handle.result().catch((e: unknown) => e);
    expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'InvalidInput' });
    expect(failureMessage(err)).toMatch(/documents\.0\.source: give sha256 with storagePath/);
    expect(await providerState()).toEqual(before);
  });
});
