import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CreateTransactionRequest,
  DATE_FORMATS,
  EsignCompletedWebhook,
  IframeRequest,
  normalizeUploadResponse,
  TAG_TYPES,
  UpdateTransactionRequest,
  UploadResponse,
  WebhookEnvelope,
} from '../../src/esign/schemas.js';
import { isAppliedColour } from '../../packages/sandbox/src/style.js';
import { describeIssues, issuesToProblemErrors } from '../../src/util/zod-issues.js';
import { createRequest } from '../support/fixtures.js';

function issuesOf(result: { success: boolean; error?: unknown }): string {
  expect(result.success).toBe(false);
  return describeIssues(result.error as never);
}

describe('contract schemas', () => {
  it('knows all 18 tag types and the 10 date formats of the spec', () => {
    expect(new Set(TAG_TYPES).size).toBe(18);
    expect(DATE_FORMATS).toContain('MMMM do, yyyy');
    expect(DATE_FORMATS).toHaveLength(10);
  });

  it('accepts both upload response shapes and normalises them', () => {
    const docId = randomUUID();
    const envelope = UploadResponse.parse({ data: [{ StoragePath: 'f/a.pdf', docId }] });
    const plain = UploadResponse.parse([{ file: 'a.pdf', status: 'uploaded', StoragePath: 'f/a.pdf' }]);
    expect(normalizeUploadResponse(envelope)).toEqual([{ StoragePath: 'f/a.pdf', docId }]);
    expect(normalizeUploadResponse(plain)).toEqual([{ StoragePath: 'f/a.pdf', file: 'a.pdf' }]);
    expect(UploadResponse.safeParse([{ file: 'a.pdf', status: 'failed', StoragePath: 'f/a.pdf' }]).success).toBe(false);
  });

  it('enforces the create rules: enums, tag owners, subject length', () => {
    expect(CreateTransactionRequest.safeParse(createRequest()).success).toBe(true);

    const bad = createRequest();
    bad.status = 'completed' as never;
    bad.participants[0]!.authenticationType = 'retina' as never;
    bad.participants[0]!.twoFactorContact = 'fax' as never;
    bad.documents[0]!.tags[0]!.type = 'STAMP' as never;
    bad.documents[0]!.tags[1]!.dateFormat = 'YYYY-MM-DD' as never;
    bad.documents[0]!.tags[1]!.signerId = 'stranger';
    bad.emailSubject = 's'.repeat(256);
    const message = issuesOf(CreateTransactionRequest.safeParse(bad));
    for (const field of [
      'status',
      'participants[0].authenticationType',
      'participants[0].twoFactorContact',
      'documents[0].tags[0].type',
      'documents[0].tags[1].dateFormat',
    ]) {
      expect(message).toContain(field);
    }
    // Cross-field rules run once the shapes are valid.
    const owner = createRequest();
    owner.documents[0]!.tags[1]!.signerId = 'stranger';
    expect(issuesOf(CreateTransactionRequest.safeParse(owner))).toContain('documents[0].tags[1].signerId');
    const subject = createRequest();
    subject.emailSubject = 's'.repeat(255);
    expect(CreateTransactionRequest.safeParse(subject).success).toBe(true);
    subject.emailSubject += 's';
    expect(issuesOf(CreateTransactionRequest.safeParse(subject))).toContain('emailSubject');
  });

  it('requires on update the fields spec 4.4 requires', () => {
    const full = createRequest();
    expect(UpdateTransactionRequest.safeParse(full).success).toBe(true);
    const { referenceId: _r, ...noRef } = full;
    expect(issuesOf(UpdateTransactionRequest.safeParse(noRef))).toContain('referenceId');
    const noTitle = createRequest();
    delete (noTitle.documents[0] as Partial<(typeof noTitle.documents)[0]>).title;
    expect(issuesOf(UpdateTransactionRequest.safeParse(noTitle))).toContain('documents[0].title');
    const noCustomData = createRequest();
    delete (noCustomData.documents[0]!.tags[0] as Partial<(typeof noCustomData.documents)[0]['tags'][0]>).customData;
    expect(issuesOf(UpdateTransactionRequest.safeParse(noCustomData))).toContain('documents[0].tags[0].customData');
  });

  it('accepts style colours without # but does not apply them (spec 7)', () => {
    const request = IframeRequest.parse({
      type: 'esign',
      style: { primaryColor: 'ff0000', background: '#fff' },
      data: { esignId: randomUUID(), participantIds: ['p1'] },
    });
    expect(isAppliedColour(request.style?.primaryColor)).toBe(false);
    expect(isAppliedColour(request.style?.background)).toBe(true);
    expect(isAppliedColour('#12345g')).toBe(false);
    expect(isAppliedColour('#a1b2c3')).toBe(true);
  });

  it('validates the completion webhook, and lets other events through the envelope only', () => {
    const payload = {
      event: 'esign-completed',
      entity: 'esign',
      data: { notificationId: randomUUID(), entity_id: randomUUID(), transaction_id: randomUUID() },
    };
    expect(EsignCompletedWebhook.safeParse(payload).success).toBe(true);
    expect(issuesOf(EsignCompletedWebhook.safeParse({ ...payload, data: { ...payload.data, notificationId: 'n-1' } }))).toContain(
      'data.notificationId',
    );
    const other = { event: 'esign-viewed', entity: 'esign', data: { entity_id: randomUUID() } };
    expect(WebhookEnvelope.safeParse(other).success).toBe(true);
    expect(EsignCompletedWebhook.safeParse(other).success).toBe(false);
  });

  it('turns issues into RFC 9457 error entries with JSON pointers', () => {
    const bad = createRequest();
    bad.documents[0]!.tags[0]!.signerId = 'a/b~c';
    const result = CreateTransactionRequest.safeParse(bad);
    expect(result.success).toBe(false);
    expect(issuesToProblemErrors(result.error!)).toEqual([
      { pointer: '/documents/0/tags/0/signerId', detail: 'documents[0].tags[0].signerId: signerId "a/b~c" is not the id of a participant' },
    ]);
  });
});
