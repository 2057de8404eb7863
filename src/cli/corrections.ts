/**
 * `esign correct <referenceId> <kind>`: corrects a transaction in flight (docs/workflow.md, "Corrections"). The options build one
 * correction; the client checks it and the workflow refuses what the transaction cannot take, with the reason.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { correctEsignTransaction, InvalidCorrection } from '../client/transactions.js';
import { CORRECTION_KINDS, type AddedTag, type CorrectionKind, type TransactionCorrection } from '../definitions/corrections.js';
import type { Participant } from '../esign/schemas.js';
import { CliError, Exit, type CliKit } from './context.js';
import { fields } from './output.js';

interface CorrectOptions {
  participant?: string;
  by?: string;
  reason?: string;
  email?: string;
  phone?: string;
  firstName?: string;
  middleName?: string;
  lastName?: string;
  newId?: string;
  deadline?: string;
  tag: string[];
  auth: string;
  twoFactor: string;
}

export function registerCorrectionCommand(program: Command, kit: CliKit): void {
  program
    .command('correct <referenceId> <kind>')
    .description(
      `correct a transaction in flight; kind: ${CORRECTION_KINDS.join(', ')} (a change of person or address gives a new participant id)`,
    )
    .option('--participant <id>', 'the participant to reassign, re-address, remove or resend to')
    .option('--by <who>', 'who asks, for the audit (default: cli:<your login>)')
    .option('--reason <text>')
    .option('--email <address>')
    .option('--phone <number>')
    .option('--first-name <name>')
    .option('--middle-name <name>')
    .option('--last-name <name>')
    .option('--new-id <uuid>', 'the id the corrected or added participant takes (a fresh UUID by default)')
    .option('--deadline <iso>', 'the new signing deadline, an ISO 8601 date-time (kind deadline)')
    .option('--tag <document:type:x:y:width:height:page>', "an added signer's tag (kind addSigner; repeat)", collect, [])
    .option('--auth <type>', "an added signer's authenticationType", 'none')
    .option('--two-factor <contact>', "an added signer's twoFactorContact", 'email')
    .action(async (referenceId: string, kind: string, o: CorrectOptions) => {
      const correction = correctionOf(kind, o);
      const done = await kit.withContext((ctx) =>
        correctEsignTransaction(ctx.client, referenceId, correction).catch((err: unknown) => {
          if (err instanceof InvalidCorrection) throw new CliError(err.message, Exit.usage);
          throw err;
        }),
      );
      kit.print(done, () => {
        const { removed, added, resentTo, deadline, url, ...rest } = done;
        const who = (p: { id: string; name: string } | undefined) => (p ? `${p.name} (${p.id})` : undefined);
        return fields({
          ...rest,
          ...(removed ? { removed: who(removed) } : {}),
          ...(added ? { added: who(added) } : {}),
          ...(resentTo ? { resentTo: who(resentTo) } : {}),
          ...(deadline ? { deadline: `${deadline.from} -> ${deadline.to}` } : {}),
          ...(url ? { url } : {}),
        });
      });
    });
}

const collect = (value: string, all: string[]) => [...all, value];

/** The correction the options describe; what is missing or malformed is the client's check to say. */
export function correctionOf(kind: string, o: CorrectOptions): TransactionCorrection {
  if (!(CORRECTION_KINDS as readonly string[]).includes(kind))
    throw new CliError(`unknown kind "${kind}": one of ${CORRECTION_KINDS.join(', ')}`, Exit.usage);
  const asked = { by: o.by ?? `cli:${userInfo().username}`, ...(o.reason ? { reason: o.reason } : {}) };
  const participantId = o.participant ?? '';
  const person = {
    firstName: o.firstName ?? '',
    lastName: o.lastName ?? '',
    email: o.email ?? '',
    ...(o.middleName ? { middleName: o.middleName } : {}),
    ...(o.phone ? { phone: o.phone } : {}),
  };
  const newId = o.newId ? { id: o.newId } : {};
  switch (kind as CorrectionKind) {
    case 'reassign':
      return { kind: 'reassign', ...asked, participantId, to: { ...person, ...newId } };
    case 'contact':
      return {
        kind: 'contact',
        ...asked,
        participantId,
        ...(o.email ? { email: o.email } : {}),
        ...(o.phone ? { phone: o.phone } : {}),
        ...(o.newId ? { newId: o.newId } : {}),
      };
    case 'addSigner':
      return {
        kind: 'addSigner',
        ...asked,
        participant: {
          ...person,
          ...newId,
          // Checked by the client's schema, which names the values it takes.
          authenticationType: o.auth as Participant['authenticationType'],
          twoFactorContact: o.twoFactor as Participant['twoFactorContact'],
        },
        tags: o.tag.map(tagOf),
      };
    case 'removeSigner':
      return { kind: 'removeSigner', ...asked, participantId };
    case 'deadline':
      return { kind: 'deadline', ...asked, deadline: o.deadline ?? '' };
    case 'resend':
      return { kind: 'resend', ...asked, participantId };
  }
}

function tagOf(spec: string): AddedTag {
  const [document, type, ...numbers] = spec.split(':');
  const [x, y, width, height, page] = numbers.map(Number);
  if (numbers.length !== 5 || [document, x, y, width, height, page].some((n) => !Number.isFinite(Number(n))))
    throw new CliError(
      `--tag "${spec}" must be document:type:x:y:width:height:page (e.g. 0:SIGNATURETEMPLATE:72:120:200:30:0)`,
      Exit.usage,
    );
  return { document: Number(document), type: type as AddedTag['type'], x: x!, y: y!, width: width!, height: height!, page: page! };
}
