/**
 * `esign events <referenceId>`, `esign events redeliver <referenceId>`, `esign events failing`: what a transaction
 * sent to its integrator, what the endpoint answered, sending it again, and which endpoints are failing
 * (docs/integrator-events.md). The work is in the client helpers (src/client/event-log.ts).
 */
import type { Command } from 'commander';
import { listEsignEvents, NoEventLog, redeliverEsignEvents } from '../client/event-log.js';
import type { LoggedEvent } from '../definitions/event-log.js';
import { EsignCallbackHealth } from '../definitions/search-attributes.js';
import { CliError, Exit, type CliKit } from './context.js';
import { table } from './output.js';

function sequenceNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new CliError(`--after takes a sequence number (0 or more), not "${v}"`, Exit.usage);
  return n;
}

function lastAnswer(e: LoggedEvent): string {
  const a = e.attempts.at(-1);
  if (!a) return '-';
  return `${a.status !== undefined ? `HTTP ${a.status}` : (a.error ?? 'no answer')} in ${a.ms} ms`;
}

const notFound = (err: unknown) => {
  if (err instanceof NoEventLog) throw new CliError(err.message, Exit.notFound);
  throw err;
};

export function registerEventCommands(program: Command, kit: CliKit): void {
  const events = program
    .command('events')
    .description("a transaction's events to its callbackUrl: each with its delivery attempts; `redeliver`, `failing`")
    .argument('[referenceId]')
    .option('--after <sequence>', 'only the events after this sequence number', sequenceNumber)
    .action(async (referenceId: string | undefined, o: { after?: number }) => {
      if (!referenceId) throw new CliError('name a transaction: esign events <referenceId> (or: esign events failing)', Exit.usage);
      const log = await kit.withContext((ctx) => listEsignEvents(ctx.client, referenceId, { after: o.after ?? 0 }).catch(notFound));
      kit.print(log, () =>
        [
          `${log.referenceId} → ${log.endpoint} (${log.health}${log.ended ? ', transaction ended' : ''})`,
          table(
            log.events.map((e) => ({
              seq: e.sequence,
              type: e.type,
              state: e.state,
              attempts: e.attemptCount,
              last: lastAnswer(e),
              id: e.id,
              ...(e.failure ? { failure: e.failure } : {}),
            })),
            ['seq', 'type', 'state', 'attempts', 'last', 'id', ...(log.events.some((e) => e.failure) ? ['failure'] : [])],
          ),
        ].join('\n'),
      );
    });

  events
    .command('redeliver <referenceId>')
    .description('send events again, with their own webhook-id, in order: all, those after --after, or the one --event names')
    .option('--after <sequence>', 'every event after this sequence number', sequenceNumber)
    .option('--event <webhook-id>', 'one event, by its webhook-id (evt_…)')
    .action(async (referenceId: string, o: { after?: number; event?: string }) => {
      if (o.after !== undefined && o.event !== undefined) throw new CliError('give --after or --event, not both', Exit.usage);
      const request = o.event !== undefined ? { eventId: o.event } : { after: o.after ?? 0 };
      const queued = await kit.withContext((ctx) =>
        redeliverEsignEvents(ctx.client, referenceId, request, { taskQueue: ctx.taskQueue }).catch((err: unknown) => {
          // The log's validator refuses an unknown event or an empty choice: the integrator's words, as a usage error.
          if ((err as Error).name === 'WorkflowUpdateFailedError')
            throw new CliError(((err as Error).cause as Error | undefined)?.message ?? (err as Error).message, Exit.usage);
          return notFound(err);
        }),
      );
      kit.print(queued, () => `queued ${queued.queued} event(s) for redelivery: ${queued.sequences.join(', ')}`);
    });

  events
    .command('failing')
    .description('transactions whose endpoint is failing: an event was given up after its retries')
    .action(async () => {
      const rows = await kit.withContext(async (ctx) => {
        const found: Record<string, unknown>[] = [];
        for await (const w of ctx.client.workflow.list({ query: `${EsignCallbackHealth.name} = "failing"` })) {
          found.push({ log: w.workflowId, status: w.status.name, since: w.startTime.toISOString() });
        }
        return found;
      });
      kit.print(rows, () => table(rows, ['log', 'status', 'since']));
    });
}
