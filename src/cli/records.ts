/**
 * `esign hold|release|holds`: legal holds (docs/records.md). A hold keeps every archive it covers (one provider
 * transaction's, every one of a referenceId or of a bulk send) past its retention until it is released; the register keeps who
 * placed and released each, and why.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { listLegalHolds, placeLegalHold, releaseLegalHold } from '../client/records.js';
import { HOLD_SCOPES, type HoldScope, type LegalHold } from '../definitions/records.js';
import { CliError, Exit, type CliKit } from './context.js';
import { fields, table } from './output.js';

export function registerRecordsCommands(program: Command, kit: CliKit): void {
  const by = (o: { by?: string }) => o.by ?? `cli:${userInfo().username}`;
  program
    .command('hold <scope> <target>')
    .description("place a legal hold; scope: transaction (a transactionId), reference (a referenceId) or batch (a bulk send's batchId)")
    .requiredOption('--reason <text>', 'why (a matter, an audit): kept with the hold')
    .option('--by <who>', 'who asks (default: cli:<your login>)')
    .action(async (scope: string, target: string, o: { reason: string; by?: string }) => {
      if (!(HOLD_SCOPES as readonly string[]).includes(scope))
        throw new CliError(`unknown scope "${scope}": one of ${HOLD_SCOPES.join(', ')}`, Exit.usage);
      const hold = await kit.withContext((ctx) =>
        placeLegalHold(ctx.client, { scope: scope as HoldScope, target, reason: o.reason, by: by(o) }, { taskQueue: ctx.taskQueue }),
      );
      kit.print(hold, () => fields(line(hold)));
    });
  program
    .command('release <holdId>')
    .description('release a legal hold: what it covered is purged once its retention ended (and no other hold keeps it)')
    .requiredOption('--reason <text>', 'why it is released: kept with the hold')
    .option('--by <who>', 'who asks (default: cli:<your login>)')
    .action(async (holdId: string, o: { reason: string; by?: string }) => {
      const hold = await kit.withContext((ctx) => releaseLegalHold(ctx.client, { holdId, reason: o.reason, by: by(o) }));
      kit.print(hold, () => fields(line(hold)));
    });
  program
    .command('holds')
    .description('list the legal holds that stand (--all: the released ones too)')
    .option('--all', 'include released holds')
    .action(async (o: { all?: boolean }) => {
      const holds = (await kit.withContext((ctx) => listLegalHolds(ctx.client))).filter((h) => o.all || !h.released);
      kit.print(holds, () =>
        holds.length === 0 ? 'no holds' : table(holds.map(line), ['id', 'scope', 'target', 'reason', 'by', 'placedAt', 'released']),
      );
    });
}

const line = (h: LegalHold) => ({
  id: h.id,
  scope: h.scope,
  target: h.target,
  reason: h.reason,
  by: h.by,
  placedAt: h.placedAt,
  released: h.released ? `${h.released.at} by ${h.released.by}: ${h.released.reason}` : '',
});
