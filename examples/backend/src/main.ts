/**
 * A backend on @esign-orchestrator/client alone, on a machine that shares no disk with the workers: it generates a
 * PDF, uploads it to the workers' object store, starts a transaction with two signers, gets their signing URLs,
 * with `--approver` has it approved first (as each approver: a backend's approval screen does this),
 * optionally signs for them in the provider sandbox (its own integration test, no browser), waits for the outcome,
 * downloads and checks the signed archive, and receives and verifies the orchestrator's signed events, checking
 * their sequence numbers run 1..n in order. Every line it prints is one JSON object with a `kind` (`uploaded`,
 * `approved`, `signing-url`, `signed`, `event`, `outcome`, `archive`, `events`, `failed`), for people and scripts alike.
 * README.md runs it against `npm run dev`.
 *
 *   node src/main.ts [pdf] [--signer "Ada Lovelace <ada@example.com>"]… [--approver cfo]… [--callback-port 4050]
 *                    [--sign-in-sandbox http://127.0.0.1:4010] [--out ./signed]
 *
 * Without a pdf it generates one. Settings: TEMPORAL_ADDRESS (127.0.0.1:7233), TEMPORAL_NAMESPACE (default),
 * ESIGN_TASK_QUEUE (esign-transactions), ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE (the workers' payload keys),
 * ESIGN_TEMPLATE_STORE (the workers' object store: a shared directory, or s3://bucket/prefix with
 * ESIGN_ARCHIVE_S3_ENDPOINT/_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which also fetch an S3 archive),
 * ESIGN_CALLBACK_SECRETS and ESIGN_CALLBACK_HOST (127.0.0.1) for --callback-port, SANDBOX_ADMIN_TOKEN for
 * --sign-in-sandbox when the sandbox has one.
 */
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  actInSandbox,
  approveEsignTransaction,
  connectEsignClient,
  dataConverterFromEnv,
  DEFAULT_TASK_QUEUE,
  downloadArchive,
  EsignEventVerifier,
  failureTypeOf,
  issueSigningUrl,
  objectStoreFromEnv,
  startEsignTransaction,
  uploadDocument,
  type EsignTransactionInput,
  type EsignTransactionResult,
  type ParticipantInput,
  type VerifiedEsignEvent,
} from '@esign-orchestrator/client';

function print(kind: string, fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ kind, ...fields })}\n`);
}

function usage(problem: string): never {
  process.stderr.write(
    `${problem}\nusage: node src/main.ts [pdf] [--signer "First Last <email>"]… [--approver ID]… [--callback-port N] [--sign-in-sandbox URL] [--out DIR]\n`,
  );
  process.exit(2);
}

/**
 * A one-page PDF written by hand (a backend renders its own with whatever it uses): the catalog, one page with a
 * line of text per entry, and the cross-reference table every reader needs, its offsets counted in bytes.
 */
function generatedPdf(lines: string[]): Buffer {
  const text = lines
    .map((line, i) => `BT /F1 ${i === 0 ? 18 : 11} Tf 72 ${720 - i * 22} Td (${line.replace(/[\\()]/g, (c) => `\\${c}`)}) Tj ET`)
    .join('\n');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${Buffer.byteLength(text, 'latin1')} >>\nstream\n${text}\nendstream`,
  ];
  let pdf = '%PDF-1.7\n';
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  }
  const xref = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/** "Ada Lovelace <ada@example.com>" → a participant, with an id of ours (signing URLs are asked for by id). */
function signerOf(text: string): ParticipantInput & { id: string } {
  const match = /^\s*(\S+)\s+(.+?)\s+<([^>\s]+@[^>\s]+)>\s*$/.exec(text);
  if (!match) usage(`--signer must look like "First Last <email>", not ${JSON.stringify(text)}`);
  return {
    id: randomUUID(),
    firstName: match[1]!,
    lastName: match[2]!,
    email: match[3]!,
    authenticationType: 'none',
    twoFactorContact: 'email',
  };
}

/** The callback a transaction's events are POSTed to: each verified over its exact bytes, and deduplicated by id. */
async function receiveEvents(host: string, port: number, secret: string) {
  const verifier = new EsignEventVerifier(secret);
  // By id, in the order they arrived.
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
        print('event', { id: event.id, type: event.type, sequence: event.sequence, data: event.data });
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
    /**
     * The log's numbering held: the events received are numbered 1..n with no gap (none missed), and arrived in that
     * order (the orchestrator sends one at a time, lowest first).
     */
    sequences() {
      const arrived = [...seen.values()].map((e) => e.sequence ?? null);
      const sorted = arrived.filter((s): s is number => s !== null).sort((a, b) => a - b);
      return {
        arrived,
        complete: sorted.length === arrived.length && sorted.every((s, i) => s === i + 1),
        inOrder: arrived.every((s, i) => s === sorted[i]),
      };
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    signer: { type: 'string', multiple: true, default: ['Ada Lovelace <ada@example.com>', 'Alan Turing <alan@example.com>'] },
    approver: { type: 'string', multiple: true, default: [] },
    'callback-port': { type: 'string' },
    'sign-in-sandbox': { type: 'string' },
    out: { type: 'string', default: 'signed' },
  },
});
const signers = values.signer.map(signerOf);

let dataConverter: ReturnType<typeof dataConverterFromEnv>;
try {
  // The workers refuse unencrypted payloads: without keys this says which variable to set, rather than start plain.
  dataConverter = dataConverterFromEnv(process.env, { required: true });
} catch (err) {
  usage((err as Error).message);
}
const store = objectStoreFromEnv(process.env);
if (!store) usage("set ESIGN_TEMPLATE_STORE to the workers' object store (a shared directory, or s3://bucket/prefix)");
const secret = process.env.ESIGN_CALLBACK_SECRETS;
if (values['callback-port'] !== undefined && !secret)
  usage('--callback-port needs ESIGN_CALLBACK_SECRETS, the whsec_ secret the workers sign events with');

// A wrong address fails with TemporalUnreachable, naming it.
const client = await connectEsignClient({ dataConverter });
const events =
  values['callback-port'] !== undefined && secret
    ? await receiveEvents(process.env.ESIGN_CALLBACK_HOST ?? '127.0.0.1', Number(values['callback-port']), secret)
    : undefined;

// The workflow id and a search attribute, never encrypted: no names or e-mail addresses in it.
const referenceId = `example-${randomUUID()}`;
let exitCode = 0;
try {
  // 1. The document, handed over through the workers' store by its SHA-256: no path or URL of ours to share.
  const pdf = positionals[0]
    ? await readFile(resolve(positionals[0]))
    : generatedPdf(['Example agreement', `Reference ${referenceId}`, ...signers.map((s) => `Signer: ${s.firstName} ${s.lastName}`)]);
  const uploaded = await uploadDocument(store, pdf);
  print('uploaded', { sha256: uploaded.sha256, bytes: uploaded.bytes, key: uploaded.key });

  // 2. The transaction: one signature field per signer, events to our endpoint (on the workers' ESIGN_ALLOWED_URLS).
  const input: EsignTransactionInput = {
    referenceId,
    title: 'Example agreement',
    documents: [
      {
        title: 'Agreement',
        source: uploaded.source,
        tags: signers.map((s, i) => ({
          type: 'SIGNATURETEMPLATE',
          x: 72 + (i % 2) * 258,
          y: 120 + Math.floor(i / 2) * 60,
          width: 200,
          height: 36,
          page: 0,
          signerId: s.id,
        })),
      },
    ],
    participants: signers,
    notifyParticipants: { email: false },
    ...(events ? { callbackUrl: events.url } : {}),
    // Sent only once every approver approved: a draft at the provider until then.
    ...(values.approver.length > 0 ? { approval: { approvers: values.approver.map((id) => ({ id })) } } : {}),
  };
  const started = await startEsignTransaction(client, input, { taskQueue: process.env.ESIGN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE });

  // 2b. Each approver's yes, as your approval screen would send it once they said so (it records who and when).
  for (const approverId of values.approver) {
    const answer = await approveEsignTransaction(client, referenceId, { approverId, comment: 'approved in the example' });
    print('approved', { approverId, approvals: answer.approvals, quorum: answer.quorum, outcome: answer.outcome });
  }

  // 3. A signing URL per signer (single-use, short-lived: hand each to its signer now).
  for (const s of signers) {
    const { url, transactionId } = await issueSigningUrl(client, referenceId, { participantIds: [s.id] });
    print('signing-url', { referenceId, workflowId: started.workflowId, transactionId, participantId: s.id, url });
  }

  // 4. In the sandbox only: sign for them, as the backend's integration tests do (it refuses any other URL).
  const sandboxUrl = values['sign-in-sandbox'];
  if (sandboxUrl) {
    for (const s of signers) {
      const signed = await actInSandbox(client, referenceId, s.id, {
        sandboxUrl,
        ...(process.env.SANDBOX_ADMIN_TOKEN ? { adminToken: process.env.SANDBOX_ADMIN_TOKEN } : {}),
      });
      print('signed', { participantId: s.id, transactionId: signed.transactionId, completed: signed.completed ?? false });
    }
  }

  // 5. The outcome.
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

  // 6. The archive, fetched from wherever the workers keep it (their disk's file://, or S3) and checked.
  if (result.archive) {
    // downloadArchive refuses a ZIP whose bytes are not the result's, or a manifest of another ZIP; checked again
    // here as an auditor would, and the document signed is the one uploaded.
    const downloaded = await downloadArchive(result, join(resolve(values.out), referenceId));
    const zipSha256 = createHash('sha256')
      .update(await readFile(downloaded.zip))
      .digest('hex');
    const originals = downloaded.contents.documents.map((d) => d.sha256 ?? null);
    const checked =
      zipSha256 === result.archive.sha256 && downloaded.contents.zip.sha256 === zipSha256 && originals.includes(uploaded.sha256);
    print('archive', { zip: downloaded.zip, manifest: downloaded.manifest, sha256: zipSha256, originals, checked });
    if (!checked) exitCode = 1;
  }

  // 7. The events: every one received, numbered 1..n in order.
  if (events) {
    const { arrived, complete, inOrder } = events.sequences();
    print('events', { sequences: arrived, complete, inOrder });
    if (!complete || !inOrder) exitCode = 1;
  }
} catch (err) {
  // The orchestrator's failures carry a type from its catalogue (InvalidInput, UrlNotAllowed, …).
  print('failed', {
    failureType: failureTypeOf(err) ?? null,
    name: (err as Error).name,
    message: err instanceof Error ? err.message : String(err),
  });
  exitCode = 1;
} finally {
  await events?.close();
  await client.connection.close();
}
process.exit(exitCode);
