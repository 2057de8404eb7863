// `esign`: the operator and script CLI. Human-readable output by default,
// `--json` for scripts; exit codes in context.ts (0 ok, 2 usage, 3 not found,
// 4 transaction not completed, 5 Temporal or provider unreachable).
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Command, CommanderError } from 'commander';
import * as commands from './commands.js';
import { CliError, createContext, Exit, type CliContext } from './context.js';
import { demo } from './demo.js';
import { evidenceTable, fields, table } from './output.js';
import { registerBulkCommands } from './bulk.js';
import { approvalLine, registerApprovalCommands } from './approvals.js';
import { registerCorrectionCommand } from './corrections.js';
import { registerErasureCommands } from './erasure.js';
import { registerRecordsCommands } from './records.js';
import { registerEventCommands } from './events.js';
import { registerTemplateCommands, startWithTemplate, type TemplateStartOptions } from './templates.js';

const program = new Command('esign')
  .description('Durable e-signature transactions on Temporal')
  .option('--json', 'print JSON for scripts')
  .showHelpAfterError()
  .exitOverride();

const json = () => program.opts<{ json?: boolean }>().json === true;
const print = (value: unknown, human: () => string) => process.stdout.write(`${json() ? JSON.stringify(value, null, 2) : human()}\n`);

async function withContext<T>(run: (ctx: CliContext) => Promise<T>): Promise<T> {
  const ctx = await createContext();
  try {
    return await run(ctx);
  } finally {
    await ctx.close();
  }
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

program
  .command('start')
  .description('start a transaction from PDFs (uploaded by the CLI) or StoragePaths, from a JSON input file, or from a template')
  .option('--file <path>', 'a local PDF (repeatable)', collect)
  .option('--storage-path <path>', 'an already uploaded StoragePath (repeatable)', collect)
  .option('--signer <"First Last <email>">', 'a signer (repeatable, in signing order)', collect)
  .option('--input <file.json>', 'the full workflow input (see docs/workflow.md)')
  .option('--reference-id <id>', 'your reference (default: generated); no personal data')
  .option('--title <title>')
  .option('--draft', 'create as a draft; send later')
  .option('--deadline <duration>', 'signing deadline, e.g. "14 days"')
  .option('--reconcile <duration>', 'provider poll interval, e.g. "1 hour"')
  .option('--signing-url', "return the first signer's URL in the same call")
  .option('--template <name@version>', 'start from a template (docs/templates.md) instead of files and signers')
  .option('--role <Role="First Last <email>">', "a template role's person (repeatable)", collect)
  .option('--value <field=text>', "a template's merge value (repeatable)", collect)
  .action(async (options: TemplateStartOptions) => {
    const templated = options.template !== undefined || options.role !== undefined || options.value !== undefined;
    const started = await withContext((ctx) => (templated ? startWithTemplate(ctx, options) : commands.start(ctx, options)));
    print(
      started,
      () =>
        `${fields({ referenceId: started.referenceId, workflowId: started.workflowId, ...('template' in started ? { template: started.template } : {}), ...(started.signingUrl ? { signingUrl: started.signingUrl } : {}) })}\n\n${table(started.participants)}`,
    );
  });

program
  .command('status <referenceId>')
  .description("the transaction's phase, provider ids, participants and result")
  .action(async (referenceId: string) => {
    const s = await withContext((ctx) => commands.status(ctx, referenceId));
    print(s, () => {
      const { participants, result, failure, approval, ...rest } = s;
      const ending = result
        ? {
            outcome: result.status,
            reason: result.reason ?? null,
            ...(result.declinedBy ? { declinedBy: `${result.declinedBy.name} (${result.declinedBy.participantId})` } : {}),
            ...(result.rejectedBy ? { rejectedBy: result.rejectedBy.approverId } : {}),
            ...(result.endedBy ? { endedBy: result.endedBy } : {}),
          }
        : {};
      // Failed or stuck: the failure on one line, its type first (CodecKeyUnknown, UrlNotAllowed, …).
      const why = failure ? { failure: `${failure.type ? `${failure.type}: ` : ''}${failure.message}` } : {};
      const text = `${fields({ ...rest, ...(approval ? { approval: approvalLine(approval) } : {}), ...why, ...ending, archive: result?.archive?.uri ?? null })}\n\n${table(participants, ['id', 'name', 'status', 'at'])}`;
      return result?.archive ? `${text}\n\n${evidenceTable(result.archive.evidence)}` : text;
    });
  });

program
  .command('list')
  .description('transactions from Temporal visibility (default) or from the provider')
  .option('--status <status>', 'phase (Temporal) or provider status (--provider)')
  .option('--provider', 'list from the provider instead')
  .option('--limit <n>', 'at most this many', (v) => Number.parseInt(v, 10), 50)
  .action(async (options: { status?: string; provider?: boolean; limit?: number }) => {
    const listed = await withContext((ctx) => commands.list(ctx, options));
    print(listed, () => `${table(listed.rows)}\n${listed.total} transaction(s)`);
  });

program
  .command('url <referenceId> <participantId>')
  .description('a fresh signing URL for a participant (issueSigningUrl update)')
  .action(async (referenceId: string, participantId: string) => {
    const { url } = await withContext((ctx) => commands.url(ctx, referenceId, participantId));
    print({ url }, () => url);
  });

program
  .command('sign <referenceId> <participantId>')
  .description('sign as a participant in the provider sandbox (tests and demos without a browser; refused against a real provider)')
  .action(async (referenceId: string, participantId: string) => {
    const done = await withContext((ctx) => commands.actAs(ctx, referenceId, participantId));
    print(done, () => `signed as ${participantId}${done.completed ? ': the transaction is complete' : ''}`);
  });

program
  .command('decline <referenceId> <participantId>')
  .description('decline as a participant in the provider sandbox (tests without a browser; refused against a real provider)')
  .option('--reason <text>')
  .action(async (referenceId: string, participantId: string, options: { reason?: string }) => {
    const done = await withContext((ctx) =>
      commands.actAs(ctx, referenceId, participantId, { ...(options.reason ? { reason: options.reason } : {}) }),
    );
    print(done, () => `declined as ${participantId}`);
  });

program
  .command('cancel <referenceId>')
  .description('cancel a transaction that is not yet completed')
  .option('--reason <text>')
  .action(async (referenceId: string, options: { reason?: string }) => {
    const result = await withContext((ctx) => commands.cancel(ctx, referenceId, options.reason));
    print(result, () => fields({ ...result }));
  });

program
  .command('retry-archive <referenceIdOrTransactionId>')
  .description(
    'archive again a completed transaction whose ZIP was refused (status archive_invalid), or a late completion waiting so, after fixing the cause (e.g. ESIGN_TRUST_ANCHORS) and restarting the workers',
  )
  .action(async (referenceId: string) => {
    const result = await withContext((ctx) => commands.retryArchive(ctx, referenceId));
    print(result, () => fields({ ...result }));
  });

program
  .command('download <referenceId> <dir>')
  .description(
    'copy the archived ZIP of a completed transaction and its manifest into a directory (<referenceId>.zip, <referenceId>.manifest.json), checking its SHA-256',
  )
  .action(async (referenceId: string, dir: string) => {
    const downloaded = await withContext((ctx) => commands.download(ctx, referenceId, dir));
    print(downloaded, () => {
      const { evidence, ...rest } = downloaded;
      return `${fields(rest)}\n\n${evidenceTable(evidence)}`;
    });
  });

program
  .command('demo')
  .description('a whole transaction on the dev stack: sample PDFs, two signers, followed until archived')
  .option('--auto-sign', 'sign through the sandbox (hands-off); exit 0 once the archive is verified')
  .option('--timeout <seconds>', 'give up after this long', (v) => Number.parseInt(v, 10), 600)
  .action(async (options: { autoSign?: boolean; timeout: number }) => {
    const result = await withContext((ctx) =>
      demo(ctx, {
        autoSign: options.autoSign ?? false,
        timeoutSeconds: options.timeout,
        ...(json() ? { say: (line: string) => process.stderr.write(`${line}\n`) } : {}),
      }),
    );
    if (json()) print(result, () => '');
  });

registerTemplateCommands(program, { withContext, print, json });
registerBulkCommands(program, { withContext, print, json });
registerEventCommands(program, { withContext, print, json });
registerCorrectionCommand(program, { withContext, print, json });
registerApprovalCommands(program, { withContext, print, json });
registerRecordsCommands(program, { withContext, print, json });
registerErasureCommands(program, { withContext, print, json });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode =
      err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0 ? Exit.ok : Exit.usage;
  } else if (err instanceof CliError) {
    process.stderr.write(`esign: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else if (err instanceof WorkflowUpdateFailedError) {
    // The workflow refused the request: its reason says what state the transaction is in.
    process.stderr.write(`esign: refused: ${err.cause?.message ?? err.message}\n`);
    process.exitCode = Exit.failed;
  } else {
    // An SDK error's own message is often generic ("Failed to start Workflow"): its cause says why.
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    process.stderr.write(`esign: ${explain(err instanceof Error ? `${err.message}${cause}` : String(err))}\n`);
    process.exitCode = Exit.failed;
  }
}

/** Errors from libraries, said in terms of what to do. */
function explain(message: string): string {
  if (/Unknown encoding: binary\/encrypted/.test(message)) {
    return "this transaction's data is encrypted and no codec keys were found: set ESIGN_CODEC_KEYS or ESIGN_CODEC_KEYS_FILE (the dev stack keeps them in <data dir>/codec.keys; run from the project folder or set ESIGN_DATA_DIR; docs/codec.md)";
  }
  const erased = /data key "[^"]*" was erased at (\S+)/.exec(message)?.[1];
  if (erased !== undefined)
    return `its personal data was erased at ${erased} (esign erase): its history can no longer be read; its archive is kept for its retention (docs/records.md)`;
  const keyId = /no codec key with id "([^"]*)"/.exec(message)?.[1];
  if (keyId !== undefined)
    return `the data was encrypted with codec key "${keyId}", which ESIGN_CODEC_KEYS does not hold: add it (docs/codec.md, rotation)`;
  return message;
}
