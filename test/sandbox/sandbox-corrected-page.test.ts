// The provider sandbox's signing page across a correction (an update after the page opened): a page session names the
// transaction's revision, so one opened before tags moved cannot stamp a value into the field now at its old position.
import { request as http } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CreateTransactionRequest } from '../../src/esign/schemas.js';
import { startTestSandbox, uploadedRequest, type TestSandbox } from '../support/sandbox.js';

let sb: TestSandbox;
beforeAll(async () => {
  sb = await startTestSandbox({});
});
afterAll(async () => {
  await sb?.close();
});
async function raw(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, auth = true) {
  const res = await http(url.startsWith('http') ? url : `${sb.running.url}${url}`, {
    method,
    headers: {
      ...(auth ? { authorization: `Bearer ${sb.token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      origin: sb.running.url,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}

it('a page opened before a correction that moves its tags can no longer act: it opens again from a new link', async () => {
  const base = await uploadedRequest(sb.client, { signers: 3, documents: 1 });
  const [s1, s2, s3] = base.participants;
  const text = (x: number) => ({
    type: 'FREEFORMTEXTTAGTEMPLATEANNOTATION' as const,
    x,
    y: 300,
    width: 150,
    height: 20,
    signerId: s3!.id,
    customData: {},
    page: 0,
  });
  const request: CreateTransactionRequest = {
    ...base,
    documents: [
      {
        ...base.documents[0]!,
        tags: [
          { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 30, signerId: s1!.id, customData: {}, page: 0 },
          { type: 'SIGNATURETEMPLATE', x: 330, y: 120, width: 200, height: 30, signerId: s2!.id, customData: {}, page: 0 },
          text(72), // s3 "Name" (index 2)
          text(300), // s3 "Amount" (index 3)
        ],
      },
    ],
  };
  const created = await sb.client.createTransaction(request);
  const link = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [s3!.id] } } as never);
  const page = await raw('GET', link, undefined, false);
  expect(page.status).toBe(200);
  const session = /"session":"([^"]+)"/.exec(page.text)?.[1];
  expect(session).toBeTruthy();
  // A correction removes s2 (and their tag): s3's tags move from 2,3 to 1,2.
  const removed = {
    ...request,
    participants: [s1!, s3!],
    documents: [{ ...request.documents[0]!, tags: request.documents[0]!.tags.filter((t) => t.signerId !== s2!.id) }],
  };
  expect((await raw('PUT', `/transactions/${created.id}`, { ...removed, status: 'esign_pending' })).status).toBe(201);
  // s3's page, still on the old layout, would type the name into what is now the "Amount" field: refused.
  const applied = await raw('POST', `/sign/${session}/participants/${s3!.id}/tags`, { docIndex: 0, tagIndex: 2, value: 'Bob Name' }, false);
  expect(applied.status).toBeGreaterThanOrEqual(400);
  expect(applied.text).toContain('link_expired');
  // A new link opens the page on the new layout, where the values go where they are shown.
  const again = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [s3!.id] } } as never);
  expect((await raw('GET', again, undefined, false)).status).toBe(200);
});
