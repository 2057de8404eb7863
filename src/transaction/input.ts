/**
 * The input of the transaction workflow, as a zod schema: checked by the
 * client helper before starting, and again by the worker's input-validation
 * activity (a start from the CLI or another SDK skips the helper). Workflows
 * import its types only. PDF bytes never travel here: documents are references.
 */
import { z } from 'zod';
import { EmailSubject, IframeStyle, NotifyParticipants, Participant, RequestStatus, Tag } from '../esign/schemas.js';
import { INPUT_DEFAULTS } from './defaults.js';
import { DURATION_PATTERN, durationToMs } from '../util/duration.js';
import { APPROVER_ID, MAX_APPROVERS } from '../definitions/approvals.js';
import { textProblem } from '../util/text.js';

/** Temporal duration: milliseconds or a string such as '30 days', '1 hour', '90s'. */
export const DurationInput = z.union([
  z.number().int().positive(),
  z
    .string()
    .trim()
    .regex(DURATION_PATTERN, 'must be a duration such as "30 days" or "1 hour"')
    // "0 seconds" passes the pattern: a deadline that passed at the start, a poll that never waits.
    // Zod goes on to this check after a failed pattern: only a duration is measured.
    .refine((d) => !DURATION_PATTERN.test(d) || durationToMs(d) > 0, 'must be longer than zero'),
]);
export type DurationInput = z.infer<typeof DurationInput>;

/** Text a person types for others to read, trimmed: src/util/text.ts says what it refuses and why. */
export const PlainText = (lines: 'one' | 'many') =>
  z
    .string()
    .trim()
    .superRefine((value, ctx) => {
      const why = textProblem(value, lines);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    });

/** Where a document's PDF comes from. */
export const DocumentSource = z.union([
  z
    .object({
      storagePath: z.string().min(1),
      /** SHA-256 of the PDF as the caller uploaded it: the archive then checks the provider signed exactly that file (docs/evidence.md). */
      sha256: z
        .string()
        .regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the uploaded PDF')
        .optional(),
    })
    .strict(),
  z.object({ path: z.string().min(1) }).strict(),
  z.object({ url: z.url({ protocol: /^https?$/ }) }).strict(),
  /** A template's document (docs/templates.md), read from the worker's template store by its SHA-256; `ref` is for messages. */
  z
    .object({
      template: z
        .object({
          sha256: z.string().regex(/^[0-9a-f]{64}$/, "must be the lowercase hex SHA-256 of the template's document"),
          ref: z.string().min(1).optional(),
        })
        .strict(),
    })
    .strict(),
  /**
   * A PDF the caller stored in the worker's object store (`ESIGN_TEMPLATE_STORE`) with the client's `uploadDocument`,
   * at `uploads/<sha256>.pdf` (docs/decisions/document-object-store.md): the worker reads it, checks it is the bytes
   * this SHA-256 names, and uploads it; the archive then holds the provider to that hash.
   */
  z
    .object({
      object: z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the stored PDF') }).strict(),
    })
    .strict(),
]);
export type DocumentSource = z.infer<typeof DocumentSource>;

/** Reminders: the first after `firstAfter`, then every `every`, at most `maxCount`. */
export const RemindersInput = z
  .object({ firstAfter: DurationInput, every: DurationInput, maxCount: z.number().int().min(1).max(50).default(3) })
  .strict();

/**
 * Approvers the transaction needs before it goes to its signers (docs/workflow.md, "Approvals"): it is created as
 * a draft and sent once `quorum` of them approve (all of them when omitted); one rejection ends it `rejected`, and
 * so does nothing: it ends `expired` at `deadline` (counted from the start). Reminders are `approval.requested`
 * events again, to callbackUrl, naming who has not answered.
 */
export const ApprovalInput = z
  .object({
    approvers: z
      .array(
        z
          .object({
            id: z.string().regex(APPROVER_ID, 'must be 1-128 letters, digits, . _ : - (an id, not an e-mail address)'),
            name: PlainText('one').min(1).max(200).optional(),
          })
          .strict(),
      )
      .min(1, 'at least one approver')
      .max(MAX_APPROVERS),
    quorum: z.number().int().min(1).optional(),
    deadline: DurationInput.default(INPUT_DEFAULTS.approvalDeadline),
    reminders: RemindersInput.optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    const ids = new Set<string>();
    a.approvers.forEach((x, i) => {
      if (ids.has(x.id)) ctx.addIssue({ code: 'custom', path: ['approvers', i, 'id'], message: `duplicate approver id "${x.id}"` });
      ids.add(x.id);
    });
    if (a.quorum !== undefined && a.quorum > a.approvers.length)
      ctx.addIssue({
        code: 'custom',
        path: ['quorum'],
        message: `a quorum of ${a.quorum} needs as many approvers (${a.approvers.length} named)`,
      });
  });
export type ApprovalInput = z.input<typeof ApprovalInput>;

/** A tag whose signer is named by participant id or by position in `participants`. */
export const TagInput = Tag.omit({ signerId: true, customData: true })
  .extend({
    signerId: z.string().min(1).optional(),
    signerIndex: z.number().int().nonnegative().optional(),
    customData: z.record(z.string(), z.unknown()).default({}),
  })
  .refine((t) => (t.signerId === undefined) !== (t.signerIndex === undefined), {
    message: 'give exactly one of signerId and signerIndex',
    path: ['signerId'],
  });
export type TagInput = z.input<typeof TagInput>;

export const DocumentInput = z.object({
  title: z.string().min(1).max(255),
  source: DocumentSource,
  description: z.string().optional(),
  order: z.number().optional(),
  readOnly: z.boolean().optional(),
  visible: z.boolean().optional(),
  tags: z.array(TagInput).default([]),
});
export type DocumentInput = z.input<typeof DocumentInput>;

/** A participant; the id is generated (deterministically, in the workflow) when omitted. */
export const ParticipantInput = Participant.extend({ id: Participant.shape.id.optional() });
export type ParticipantInput = z.input<typeof ParticipantInput>;

/**
 * `referenceId` becomes the workflow id and a search attribute, which are
 * never encrypted: it must not contain names or e-mail addresses.
 */
export const REFERENCE_ID =
  /^(?!(?:events|inbox|late)-|(?:evidence-upkeep|legal-holds|records-retention)\b)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/**
 * The rule REFERENCE_ID holds, for messages. The prefixes are refused because the transaction's workflow id is
 * `esign-<referenceId>` and the other workflows' ids are `esign-events-<referenceId>`, `esign-inbox-<transactionId>`,
 * `esign-late-<transactionId>`, `esign-evidence-upkeep`, `esign-legal-holds` and `esign-records-retention`: a referenceId `events-X` would take transaction X's event
 * log's id, and X's events would reach the wrong workflow.
 */
export const REFERENCE_ID_RULE =
  "must be 1-128 characters of letters, digits, . _ : - (no personal data), not starting with events-, inbox-, late-, evidence-upkeep, legal-holds or records-retention (other workflows' ids)";

export const EsignTransactionInput = z
  .object({
    referenceId: z.string().regex(REFERENCE_ID, REFERENCE_ID_RULE),
    title: z.string().max(255).optional(),
    documents: z.array(DocumentInput).min(1, 'at least one document is required').max(50),
    participants: z.array(ParticipantInput).min(1, 'at least one participant is required').max(50),
    status: RequestStatus.default(INPUT_DEFAULTS.status),
    notifyParticipants: NotifyParticipants.optional(),
    signingOrder: z.boolean().optional(),
    personalizedMessage: z.string().optional(),
    emailSubject: EmailSubject.optional(),
    evault: z.string().min(1).optional(),
    sendFinalEnoteTo: z.array(z.string().min(1)).optional(),
    taggingOrganizationId: z.string().optional(),
    taggingUserId: z.string().optional(),
    iframeStyle: IframeStyle.optional(),
    signingDeadline: DurationInput.default(INPUT_DEFAULTS.signingDeadline),
    reconcileInterval: DurationInput.default(INPUT_DEFAULTS.reconcileInterval),
    /**
     * Polls back off while nothing happens, from reconcileInterval up to this
     * (at least reconcileInterval); any notification or request resets them.
     * A draft or a refused archive wakes this often to see whether its Worker
     * Deployment version changed (docs/operations.md).
     */
    reconcileMaxInterval: DurationInput.optional(),
    /**
     * Reminders (docs/workflow.md): the first after `firstAfter`, then every
     * `every`, at most `maxCount`, never after the deadline. Each is an event
     * to callbackUrl with a fresh signing URL per participant still to sign.
     */
    reminders: RemindersInput.optional(),
    approval: ApprovalInput.optional(),
    /**
     * The most events one run of the workflow records before it continues as
     * new (default 2,000; docs/workflow.md, "Bounded history"). Lower bounds
     * hand over more often; the interleaving explorer uses them.
     */
    maxHistoryEvents: z.number().int().min(100).max(20_000).optional(),
    /**
     * How long the signed archive is kept (`10 years`; a year counts 366 days), from when it is archived; then it is
     * purged, leaving a tombstone, unless a legal hold keeps it (docs/records.md). The worker's default otherwise.
     */
    retention: DurationInput.optional(),
    /** Sub-folder (local) or key prefix (S3) of the archive store. */
    archivePrefix: z
      .string()
      .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/)
      .optional(),
    /** POSTed the result on completion, expiry or cancellation (must be on the worker's allow-list). */
    callbackUrl: z.url({ protocol: /^https?$/ }).optional(),
  })
  .superRefine((input, ctx) => {
    if (input.reminders && !input.callbackUrl) {
      ctx.addIssue({ code: 'custom', path: ['reminders'], message: 'reminders go to callbackUrl: give one' });
    }
    if (input.approval) {
      if (input.approval.reminders && !input.callbackUrl)
        ctx.addIssue({ code: 'custom', path: ['approval', 'reminders'], message: "approvers' reminders go to callbackUrl: give one" });
      if (input.status === 'draft')
        ctx.addIssue({ code: 'custom', path: ['status'], message: 'an approved transaction is sent: status draft cannot take approvers' });
      if (durationToMs(input.approval.deadline) >= durationToMs(input.signingDeadline))
        ctx.addIssue({
          code: 'custom',
          path: ['approval', 'deadline'],
          message: 'the approval deadline must come before the signing deadline',
        });
    }
    const ids = new Set<string>();
    input.participants.forEach((p, i) => {
      if (p.id === undefined) return;
      if (ids.has(p.id)) ctx.addIssue({ code: 'custom', path: ['participants', i, 'id'], message: `duplicate participant id "${p.id}"` });
      ids.add(p.id);
    });
    input.documents.forEach((d, di) =>
      d.tags.forEach((t, ti) => {
        if (t.signerId !== undefined && !ids.has(t.signerId)) {
          ctx.addIssue({
            code: 'custom',
            path: ['documents', di, 'tags', ti, 'signerId'],
            message: `"${t.signerId}" is not the id of a participant`,
          });
        }
        if (t.signerIndex !== undefined && t.signerIndex >= input.participants.length) {
          ctx.addIssue({
            code: 'custom',
            path: ['documents', di, 'tags', ti, 'signerIndex'],
            message: `there is no participant ${t.signerIndex}`,
          });
        }
      }),
    );
  });
export type EsignTransactionInput = z.input<typeof EsignTransactionInput>;
export type ValidEsignTransactionInput = z.output<typeof EsignTransactionInput>;
