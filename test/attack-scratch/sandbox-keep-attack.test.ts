import { randomUUID } from 'node:crypto';
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
async function raw(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  const res = await http(`${sb.running.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sb.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}
const sign = (t: string, p: string) => raw('POST', `/_sandbox/transactions/${t}/participants/${p}/sign`, {});
const put = (t: string, body: CreateTransactionRequest) => raw('PUT', `/transactions/${t}`, { ...body, status: 'esign_pending' });

it('after a signature: a signed tag restyled, a signed document changed, a tag laid over the signature', async () => {
  const request = await uploadedRequest(sb.client, { signers: 2 });
  const created = await sb.client.createTransaction(request);
  const [first, second] = request.participants;
  expect((await sign(created.id!, first!.id)).status).toBe(200);
  const restyled = request.documents.map((d) => ({
    ...d,
    xfdf: '<xfdf>changed</xfdf>',
    visible: false,
    readOnly: true,
    description: 'changed after signature',
    tags: [
      ...d.tags.map((t) => (t.signerId === first!.id ? { ...t, fontSize: 0.5, dateFormat: 'MM/DD/YYYY' as const, customData: { x: 1 }, required: false } : t)),
      // the second signer's text tag on top of the first's signature
      { type: 'FREEFORMTEXTTAGTEMPLATEANNOTATION' as const, x: 72, y: 120, width: 200, height: 30, signerId: second!.id, customData: {}, page: 0 },
    ],
  }));
  const res = await put(created.id!, { ...request, documents: restyled });
  console.log('restyle PUT', res.status, res.text.slice(0, 200));
  const rec = await sb.client.getTransaction(created.id!);
  console.log('stored first tag', JSON.stringify(rec.documents?.[0]?.tags?.[0]), 'visible', (rec.documents?.[0] as any)?.visible);
  expect(res.status).toBe(201);
});

it('removing the last unsigned participant after the other signed: nothing left, never completes', async () => {
  const request = await uploadedRequest(sb.client, { signers: 2 });
  const created = await sb.client.createTransaction(request);
  const [first, second] = request.participants;
  expect((await sign(created.id!, first!.id)).status).toBe(200);
  const body = { ...request, participants: [first!], documents: request.documents.map((d) => ({ ...d, tags: d.tags.filter((t) => t.signerId !== second!.id) })) };
  const res = await put(created.id!, body);
  console.log('remove-last PUT', res.status, res.text.slice(0, 200));
  await new Promise((r) => setTimeout(r, 1500));
  const rec = await sb.client.getTransaction(created.id!);
  console.log('status after', rec.status, JSON.stringify(rec.participants?.map((p: any) => p.status)));
  expect(res.status).toBe(201);
  expect(rec.status).toBe('esign_pending');
  console.log('sign first again', (await sign(created.id!, first!.id)).status);
});

it('a removed participant id put back: the old link opens for the new person', async () => {
  const request = await uploadedRequest(sb.client, { signers: 2 });
  const created = await sb.client.createTransaction(request);
  const [first, second] = request.participants;
  const oldLink = await sb.client.createIframeUrl({ type: 'esign', data: { esignId: created.esignId!, participantIds: [second!.id] } } as never);
  const removed = { ...request, participants: [first!], documents: request.documents.map((d) => ({ ...d, tags: d.tags.filter((t) => t.signerId !== second!.id) })) };
  expect((await put(created.id!, removed)).status).toBe(201);
  const dead = await http(oldLink);
  const deadText = await dead.body.text();
  console.log('old link after removal', dead.statusCode, /mismatch|not match|participant/i.test(deadText));
  // Re-added with the removed id (a new person)
  const eve = { ...second!, firstName: 'Eve', lastName: 'Newperson', email: 'eve@example.com' };
  const back = { ...request, participants: [first!, eve] };
  expect((await put(created.id!, back)).status).toBe(201);
  const page = await http(oldLink);
  const text = await page.body.text();
  console.log('old link after re-add', page.statusCode, text.includes('Eve'), text.includes('Newperson'));
  expect(page.statusCode).toBe(200);
  expect(text).toContain('Newperson');
});
