import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEsignTransaction } from '../client/transactions.js';
import { SandboxControlClient } from '../client/sandbox-control.js';
import { samplePdf } from './sample-pdf.js';
import { hashFile } from '../util/streams.js';
import { issueSigningUrlUpdate, type EsignTransactionResult } from '../definitions/transaction.js';
import { CliError, Exit, type CliContext } from './context.js';

export interface DemoOptions {
  autoSign?: boolean;
  timeoutSeconds?: number;
  say?: (line: string) => void;
}

/**
 * A whole transaction on the dev stack: two generated PDFs, two signers,
 * their signing URLs, and the workflow followed until its archive is verified.
 */
export async function demo(ctx: CliContext, options: DemoOptions = {}): Promise<EsignTransactionResult> {
  const say = options.say ?? ((line: string) => process.stdout.write(`${line}\n`));
  const provider = await ctx.provider();
  const dir = join(ctx.dataDir, 'documents', `demo-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  const files = ['Service agreement', 'Data processing annex'];
  for (const [i, title] of files.entries()) await writeFile(join(dir, `${i + 1}.pdf`), await samplePdf(title, i + 1));
  const uploaded = await provider.uploadDocuments(
    files.map((_, i) => ({ path: join(dir, `${i + 1}.pdf`), fileName: `${files[i]!.replace(/\s+/g, '-').toLowerCase()}.pdf` })),
  );
  const hashes = await Promise.all(files.map(async (_, i) => (await hashFile(join(dir, `${i + 1}.pdf`))).sha256));
  const referenceId = `demo-${Date.now().toString(36)}`;
  // Their ids are ours to give (the provider wants UUIDs): the signing URLs are then asked for by id, without reading the workflow first.
  const signers = [
    { id: randomUUID(), firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', order: 1 },
    { id: randomUUID(), firstName: 'Alan', lastName: 'Turing', email: 'alan@example.com', order: 2 },
  ];
  const { handle } = await startEsignTransaction(
    ctx.client,
    {
      referenceId,
      title: 'Demo: service agreement',
      documents: files.map((title, i) => ({
        title,
        // With the hash of what was uploaded, so the archive checks the provider signed these very files.
        source: { storagePath: uploaded[i]!.StoragePath, sha256: hashes[i]! },
        tags: [
          { type: 'SIGNATURETEMPLATE', x: 72, y: 120, width: 200, height: 36, page: 0, signerIndex: 0 },
          { type: 'DATETEMPLATE', x: 72, y: 90, width: 120, height: 20, page: 0, signerIndex: 0, dateFormat: 'MMMM do, yyyy' },
          { type: 'SIGNATURETEMPLATE', x: 340, y: 120, width: 200, height: 36, page: 0, signerIndex: 1 },
          { type: 'INITIALSTEMPLATE', x: 340, y: 90, width: 60, height: 24, page: 0, signerIndex: 1 },
        ],
      })),
      participants: signers.map((p) => ({ ...p, authenticationType: 'none' as const, twoFactorContact: 'email' as const })),
      notifyParticipants: { email: false },
      reconcileInterval: '1 minute',
      iframeStyle: { primaryColor: '#2f5bd3' },
    },
    { taskQueue: ctx.taskQueue },
  );
  say(`Started ${handle.workflowId} (referenceId ${referenceId}).`);

  // The update waits in the workflow until the provider's transaction exists: no polling here.
  const deadline = Date.now() + (options.timeoutSeconds ?? 600) * 1000;
  const timedOut = () => new CliError('demo timed out', Exit.failed);
  const participantsOf = signers.map((p) => ({ id: p.id, name: `${p.firstName} ${p.lastName}` }));
  let transactionId: string | undefined;
  for (const p of participantsOf) {
    const issued = await handle.executeUpdate(issueSigningUrlUpdate, { args: [{ participantIds: [p.id] }] });
    transactionId = issued.transactionId;
    say(`Signing URL for ${p.name}: ${issued.url}`);
  }
  if (options.autoSign) {
    const control = new SandboxControlClient(provider.baseUrl);
    try {
      for (const p of participantsOf) {
        await control.signAs(transactionId!, p.id).catch((err: unknown) => {
          throw new CliError(`auto-sign as ${p.name} failed: ${(err as Error).message} (is the provider the sandbox?)`);
        });
        say(`  signed as ${p.name} (sandbox)`);
      }
    } finally {
      await control.close();
    }
  } else {
    say('Open the URLs in a browser and sign (Ada first, then Alan). Waiting…');
  }
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([
    handle.result(),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(timedOut()), Math.max(0, deadline - Date.now())))),
  ]).finally(() => clearTimeout(timer));
  if (result.status !== 'completed' || !result.archive) throw new CliError(`transaction ended ${result.status}`, Exit.notCompleted);
  const uri = new URL(result.archive.uri);
  if (uri.protocol === 'file:') {
    const { sha256: sha } = await hashFile(fileURLToPath(uri));
    if (sha !== result.archive.sha256) throw new CliError(`archive ${result.archive.uri} does not match its SHA-256`);
    say(
      `Archive verified: ${fileURLToPath(uri)} (${result.archive.bytes} bytes, sha256 ${sha.slice(0, 16)}…, ${result.archive.files.length} files: the documents and their evidence)`,
    );
  } else {
    say(`Archived to ${result.archive.uri} (sha256 ${result.archive.sha256.slice(0, 16)}…)`);
  }
  return result;
}
