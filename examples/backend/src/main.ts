/**
 * A backend on @esign-orchestrator/client, outside the orchestrator's tree: it starts one signature transaction
 * for a PDF, prints the signer's signing URL, receives the orchestrator's signed events when given a port for
 * them, and waits for the outcome. Every line it prints is one JSON object with a `kind` (`signing-url`, `event`,
 * `outcome`, `failed`), for people and scripts alike. README.md runs it against `npm run dev`.
 *
 *   node src/main.ts <pdf> [--name "Ada Lovelace"] [--email ada@example.com] [--callback-port 4050]
 *
 * Settings: TEMPORAL_ADDRESS (127.0.0.1:7233), TEMPORAL_NAMESPACE (default), ESIGN_TASK_QUEUE
 * (esign-transactions), ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE (the workers' payload keys: they refuse
 * unencrypted input), ESIGN_CALLBACK_SECRETS (the `whsec_` secret events are signed with, for --callback-port) and
 * ESIGN_CALLBACK_HOST (127.0.0.1).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import {
  dataConverterFromEnv,
  DEFAULT_TASK_QUEUE,
  EsignEventVerifier,
  failureTypeOf,
  startEsignTransaction,
  type EsignTransactionInput,
  type EsignTransactionResult,
  type VerifiedEsignEvent,
} from '@esign-orchestrator/client';

function print(kind: string, fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ kind, ...fields })}\n`);
}

/** The callback a transaction's events are POSTed to: each verified over its exact bytes, and deduplicated by id. */
async function receiveEvents(host: string, port: number, secret: string) {
  const verifier = new EsignEventVerifier(secret);
  const seen = new Map<string, VerifiedEsignEvent>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let event: VerifiedEsignEvent;
      try {
        event = verifier.verify(Buffer.concat(chunks), req.headers);
      } catch {
        res.writeHead(401).end();
        return;
      }
      // In production the id is a unique key in your database: retries and replays deliver an event again.
      if (!seen.has(event.id)) {
        seen.set(event.id, event);
        print('event', { id: event.id, type: event.type, data: event.data });
      }
      res.writeHead(204).end();
    });
  });
  server.listen(port, host);
  await once(server, 'listening');
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${bound}/esign-events`,
    /** Waits a little for an event of this type: events are sent beside the outcome, not before it. */
    async awaitEvent(type: string, ms: number): Promise<boolean> {
      for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
        if ([...seen.values()].some((e) => e.type === type)) return true;
      }
      return false;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string', default: 'Ada Lovelace' },
    email: { type: 'string', default: 'ada@example.com' },
    'callback-port': { type: 'string' },
  },
});
const pdf = positionals[0];
const [firstName = '', ...rest] = values.name.trim().split(/\s+/);
const lastName = rest.join(' ');
if (!pdf || !firstName || !lastName) {
  process.stderr.write('usage: node src/main.ts <pdf the worker may read> [--name "First Last"] [--email address] [--callback-port N]\n');
  process.exit(2);
}
const dataConverter = dataConverterFromEnv(process.env);
if (!dataConverter) {
  process.stderr.write("set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE to the workers' codec keys: they refuse unencrypted payloads\n");
  process.exit(2);
}
const secret = process.env.ESIGN_CALLBACK_SECRETS;
if (values['callback-port'] !== undefined && !secret) {
  process.stderr.write('--callback-port needs ESIGN_CALLBACK_SECRETS, the whsec_ secret the workers sign events with\n');
  process.exit(2);
}

const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default', dataConverter });
const events =
  values['callback-port'] !== undefined && secret
    ? await receiveEvents(process.env.ESIGN_CALLBACK_HOST ?? '127.0.0.1', Number(values['callback-port']), secret)
    : undefined;

// Participant ids are ours to give (UUIDs): the signing URL is then asked for by id in the start's own round trip.
const signerId = randomUUID();
const input: EsignTransactionInput = {
  // The workflow id and a search attribute, never encrypted: no names or e-mail addresses in it.
  referenceId: `example-${randomUUID()}`,
  title: 'Example agreement',
  documents: [
    {
      title: 'Agreement',
      source: { path: resolve(pdf) },
      tags: [{ type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 36, page: 0, signerId }],
    },
  ],
  participants: [{ id: signerId, firstName, lastName, email: values.email, authenticationType: 'none', twoFactorContact: 'email' }],
  notifyParticipants: { email: false },
  ...(events ? { callbackUrl: events.url } : {}),
};

let exitCode = 0;
try {
  const started = await startEsignTransaction(client, input, {
    taskQueue: process.env.ESIGN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    signingUrlFor: { participantIds: [signerId] },
  });
  print('signing-url', {
    referenceId: input.referenceId,
    workflowId: started.workflowId,
    transactionId: started.transactionId,
    participantId: signerId,
    url: started.signingUrl,
  });
  const result: EsignTransactionResult = await started.handle.result();
  if (events) await events.awaitEvent(`transaction.${result.status}`, 30_000);
  print('outcome', {
    referenceId: result.referenceId,
    status: result.status,
    transactionId: result.transactionId,
    ...(result.reason ? { reason: result.reason } : {}),
    ...(result.archive
      ? { archive: { uri: result.archive.uri, sha256: result.archive.sha256, files: result.archive.files.map((f) => f.name) } }
      : {}),
  });
  if (result.status !== 'completed') exitCode = 1;
} catch (err) {
  // The orchestrator's failures carry a type from its catalogue (InvalidInput, UrlNotAllowed, …).
  print('failed', { failureType: failureTypeOf(err) ?? null, message: err instanceof Error ? err.message : String(err) });
  exitCode = 1;
} finally {
  await events?.close();
  await connection.close();
}
process.exit(exitCode);
