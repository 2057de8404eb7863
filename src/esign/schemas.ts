/**
 * The provider contract (../shared/spec/esign-api.md) as zod schemas: the one
 * source of truth imported by the API client, the sandbox, the workflows and
 * the webhook bridge. Types are inferred from the schemas.
 *
 * Choices for parts the spec leaves open are recorded in docs/spec-gaps.md.
 * This module must stay free of Node APIs: workflow code imports it.
 */
import { z } from 'zod';
import {
  ESIGN_COMPLETED_EVENT,
  ESIGN_END_EVENTS,
  ESIGN_PARTICIPANT_EVENTS,
  type EVENT_DATA_IDS,
  PARTICIPANT_DATA_ID,
  PARTICIPANT_STATUSES,
} from './events.js';

/** Spec UUIDs. Lenient about version/variant bits so a real provider's ids are never refused. */
export const Uuid = z.guid();

export const TAG_TYPES = [
  'DATETEMPLATE',
  'FULLNAMETEMPLATE',
  'DOCUMENTIDTEMPLATE',
  'NOTARYSESSIONIDTEMPLATE',
  'COMMISSIONIDTEMPLATE',
  'COMMISSIONEXPIRATIONTEMPLATE',
  'DISCLAIMERTEMPLATE',
  'COMMISSIONSTAMPTEMPLATE',
  'SEALTAGTEMPLATEANNOTATION',
  'NOTARYTITLETEMPLATE',
  'NOTARYCOUNTYTEMPLATE',
  'NOTARYSTATETEMPLATE',
  'SIGNATURETEMPLATE',
  'SIGNHERETAGTEMPLATEANNOTATION',
  'INITIALSTEMPLATE',
  'INITIALHERETAGTEMPLATEANNOTATION',
  'FREEFORMTEXTTAGTEMPLATEANNOTATION',
  'TEXTANNOT',
] as const;
export const TagType = z.enum(TAG_TYPES);
export type TagType = z.infer<typeof TagType>;

/** Spec 2.4, in the interface's order; `MMMM do, yyyy` is read as one item (docs/spec-gaps.md). */
export const DATE_FORMATS = [
  'MM/DD/YYYY',
  'DD/MM/YYYY',
  'MM/DD/YY',
  'DD/MM/YY',
  'MMMM do, yyyy',
  'full',
  'MMMM',
  'do',
  'yyyy',
  'YYYY',
] as const;
export const DateFormat = z.enum(DATE_FORMATS);
export type DateFormat = z.infer<typeof DateFormat>;

export const AUTHENTICATION_TYPES = ['personal-password', 'two-factor-authentication', 'none'] as const;
export const AuthenticationType = z.enum(AUTHENTICATION_TYPES);
export const TWO_FACTOR_CONTACTS = ['sms', 'email'] as const;
export const TwoFactorContact = z.enum(TWO_FACTOR_CONTACTS);

/** Statuses a request may set (spec 3). */
export const REQUEST_STATUSES = ['draft', 'esign_pending'] as const;
export const RequestStatus = z.enum(REQUEST_STATUSES);
export type RequestStatus = z.infer<typeof RequestStatus>;

/**
 * Statuses a transaction can be in. The spec names only the request statuses
 * and mentions completed/cancelled/expired/deleted; responses are read as any
 * string so a real provider's other statuses never break the client.
 */
export const TRANSACTION_STATUSES = ['draft', 'esign_pending', 'completed', 'declined', 'cancelled', 'expired', 'deleted'] as const;
export type KnownTransactionStatus = (typeof TRANSACTION_STATUSES)[number];
export const TransactionStatus = z.string().min(1);

export const EMAIL_SUBJECT_MAX = 255;
export const EmailSubject = z.string().max(EMAIL_SUBJECT_MAX, `must be at most ${EMAIL_SUBJECT_MAX} characters`);

const finite = z.number().finite();
const nonNegative = finite.nonnegative();

// ---------------------------------------------------------------- Tag (2.4)

export const Tag = z.object({
  type: TagType,
  x: nonNegative,
  y: nonNegative,
  width: finite.positive(),
  height: finite.positive(),
  signerId: z.string().min(1),
  customData: z.record(z.string(), z.unknown()),
  page: z.number().int().nonnegative(),
  required: z.boolean().optional(),
  stateFormat: z.string().optional(),
  dateFormat: DateFormat.optional(),
  fontSize: finite.positive().optional(),
});
export type Tag = z.infer<typeof Tag>;

// ----------------------------------------------------------- Document (2.3)

export const Document = z.object({
  /** Caller-generated UUID (spec 4.2). */
  id: Uuid.optional(),
  title: z.string().min(1),
  description: z.string().optional(),
  xfdf: z.string().optional(),
  StoragePath: z.string().min(1),
  order: finite.optional(),
  pages: z.number().int().positive().optional(),
  readOnly: z.boolean().optional(),
  visible: z.boolean().optional(),
  sessionType: z.string().optional(),
  tags: z.array(Tag),
});
export type Document = z.infer<typeof Document>;

// -------------------------------------------------------- Participant (2.5)

export const Participant = z.object({
  /** Caller-generated UUID (spec 4.2); tags refer to it as `signerId`. */
  id: Uuid,
  order: finite.optional(),
  email: z.email(),
  firstName: z.string().min(1),
  middleName: z.string().optional(),
  lastName: z.string().min(1),
  address1: z.string().optional(),
  address2: z.string().optional(),
  city: z.string().optional(),
  state: z.string().optional(),
  zip: z.string().optional(),
  country: z.string().optional(),
  phone: z.string().optional(),
  kbaRequired: z.boolean().optional(),
  credAnalysisRequired: z.boolean().optional(),
  externalId: z.string().optional(),
  authenticationType: AuthenticationType,
  twoFactorContact: TwoFactorContact,
  personalPasswordQuestion: z.string().optional(),
  personalPassword: z.string().optional(),
  inviteEmailSubject: z.string().optional(),
  type: z.string().optional(),
  primary: z.boolean().optional(),
});
export type Participant = z.infer<typeof Participant>;

// ------------------------------------------------ Transaction requests (4.2, 4.4)

export const NotifyParticipants = z.object({ email: z.boolean() });
export type NotifyParticipants = z.infer<typeof NotifyParticipants>;

type RequestBody = { documents: Document[]; participants: Participant[] };

/** Cross-field rules shared by create and update: unique ids, tags owned by participants. */
function checkReferences(body: RequestBody, ctx: z.RefinementCtx): void {
  const participantIds = new Set<string>();
  body.participants.forEach((p, i) => {
    if (participantIds.has(p.id)) {
      ctx.addIssue({ code: 'custom', path: ['participants', i, 'id'], message: `duplicate participant id "${p.id}"` });
    }
    participantIds.add(p.id);
    // Authentication the provider could not carry out is refused up front (docs/spec-gaps.md, row 42).
    if (p.authenticationType === 'personal-password' && !p.personalPassword) {
      ctx.addIssue({
        code: 'custom',
        path: ['participants', i, 'personalPassword'],
        message: 'personal-password authentication needs a personalPassword',
      });
    }
    if (p.authenticationType === 'two-factor-authentication' && p.twoFactorContact === 'sms' && !p.phone) {
      ctx.addIssue({
        code: 'custom',
        path: ['participants', i, 'phone'],
        message: 'two-factor authentication by sms needs a phone number',
      });
    }
  });
  const documentIds = new Set<string>();
  body.documents.forEach((d, di) => {
    if (d.id !== undefined) {
      if (documentIds.has(d.id)) {
        ctx.addIssue({ code: 'custom', path: ['documents', di, 'id'], message: `duplicate document id "${d.id}"` });
      }
      documentIds.add(d.id);
    }
    d.tags.forEach((t, ti) => {
      if (!participantIds.has(t.signerId)) {
        ctx.addIssue({
          code: 'custom',
          path: ['documents', di, 'tags', ti, 'signerId'],
          message: `signerId "${t.signerId}" is not the id of a participant`,
        });
      }
      if (d.pages !== undefined && t.page >= d.pages) {
        ctx.addIssue({
          code: 'custom',
          path: ['documents', di, 'tags', ti, 'page'],
          message: `page ${t.page} is beyond the document's ${d.pages} page(s) (pages count from 0)`,
        });
      }
    });
  });
}

const requestCommon = {
  documents: z.array(Document).min(1, 'at least one document is required'),
  participants: z.array(Participant).min(1, 'at least one participant is required'),
  status: RequestStatus,
  notifyParticipants: NotifyParticipants.optional(),
  signingOrder: z.boolean().optional(),
  personalizedMessage: z.string().optional(),
  emailSubject: EmailSubject.optional(),
};

export const CreateTransactionRequest = z
  .object({
    ...requestCommon,
    referenceId: z.string().min(1).optional(),
    taggingOrganizationId: z.string().optional(),
    taggingUserId: z.string().optional(),
    evault: z.string().min(1).optional(),
    sendFinalEnoteTo: z.array(z.string().min(1)).optional(),
  })
  .superRefine(checkReferences);
export type CreateTransactionRequest = z.infer<typeof CreateTransactionRequest>;

export const UpdateTransactionRequest = z
  .object({
    ...requestCommon,
    referenceId: z.string().min(1),
  })
  .superRefine(checkReferences);
export type UpdateTransactionRequest = z.infer<typeof UpdateTransactionRequest>;

// ------------------------------------------------------- Transaction records

/** A document as returned by the provider: lenient, since responses carry subsets (4.2). */
export const DocumentRecord = Document.partial().extend({
  StoragePath: z.string().min(1),
});
export type DocumentRecord = z.infer<typeof DocumentRecord>;

/**
 * A participant as returned: the identity fields, the rest optional. The
 * spec shows no progress fields; the provider sandbox adds `status` and its
 * timestamps (docs/spec-gaps.md, row 33), and a provider without them is read
 * as telling nothing about progress.
 */
export const ParticipantRecord = Participant.partial().extend({
  id: z.string().min(1),
  email: z.string().optional(),
  status: z.enum(PARTICIPANT_STATUSES).optional(),
  viewedAt: z.string().optional(),
  signedAt: z.string().optional(),
  declinedAt: z.string().optional(),
  declineReason: z.string().optional(),
});
export type ParticipantRecord = z.infer<typeof ParticipantRecord>;

export const TransactionRecord = z.looseObject({
  id: Uuid.optional(),
  esignId: Uuid.optional(),
  status: TransactionStatus,
  referenceId: z.string().optional(),
  documents: z.array(DocumentRecord),
  participants: z.array(ParticipantRecord),
  taggingOrganizationId: z.string().nullish(),
  taggingUserId: z.string().nullish(),
  notifyParticipants: NotifyParticipants.optional(),
  signingOrder: z.boolean().optional(),
  personalizedMessage: z.string().optional(),
  emailSubject: z.string().optional(),
  evault: z.string().nullish(),
  sendFinalEnoteTo: z.array(z.string()).nullish(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  completedAt: z.string().optional(),
});
export type TransactionRecord = z.infer<typeof TransactionRecord>;

/** Create returns the record in a short form (no ids) or a fuller one with `id` and `esignId` (4.2). */
export const CreateTransactionResponse = TransactionRecord;
export type CreateTransactionResponse = TransactionRecord;

/** A listed transaction always has its id (4.5). */
export const ListedTransaction = TransactionRecord.extend({ id: Uuid });
export type ListedTransaction = z.infer<typeof ListedTransaction>;

export const ListTransactionsResponse = z.object({
  data: z.array(ListedTransaction),
  total: z.number().int().nonnegative(),
});
export type ListTransactionsResponse = z.infer<typeof ListTransactionsResponse>;

/**
 * The list's envelope alone: what shows the provider answers its list, whatever records it holds (a newest record in
 * a shape this client does not know, maybe another integrator's, must not hide that it answered).
 */
export const ListEnvelope = z.looseObject({ data: z.array(z.unknown()), total: z.number().int().nonnegative() });

/** Query of `GET /transactions` (chosen; see docs/spec-gaps.md). */
export const ListTransactionsQuery = z.object({
  status: TransactionStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().nonnegative().default(0),
});
export type ListTransactionsQuery = z.input<typeof ListTransactionsQuery>;

// ------------------------------------------------------------- Upload (2.1)

export const UploadEnvelope = z.object({
  data: z.array(z.object({ StoragePath: z.string().min(1), docId: Uuid })),
});
export const UploadPlainArray = z.array(z.object({ file: z.string(), status: z.literal('uploaded'), StoragePath: z.string().min(1) }));
export const UploadResponse = z.union([UploadEnvelope, UploadPlainArray]);
export type UploadResponse = z.infer<typeof UploadResponse>;

/** Both upload shapes normalised to one, in the order the files were sent. */
export interface UploadedDocument {
  StoragePath: string;
  docId?: string;
  file?: string;
}

export function normalizeUploadResponse(response: UploadResponse): UploadedDocument[] {
  if (Array.isArray(response)) return response.map(({ file, StoragePath }) => ({ file, StoragePath }));
  return response.data.map(({ StoragePath, docId }) => ({ StoragePath, docId }));
}

// --------------------------------------------------------------- Iframe (2.6)

export const IframeStyle = z.object({
  primaryColor: z.string().max(64).optional(),
  secondaryColor: z.string().max(64).optional(),
  fontType: z.string().max(200).optional(),
  textColor: z.string().max(64).optional(),
  background: z.string().max(64).optional(),
  successColor: z.string().max(64).optional(),
  errorColor: z.string().max(64).optional(),
  infoColor: z.string().max(64).optional(),
});
export type IframeStyle = z.infer<typeof IframeStyle>;

export const IframeRequest = z.object({
  type: z.literal('esign'),
  style: IframeStyle.optional(),
  data: z.object({
    esignId: Uuid,
    participantIds: z.array(z.string().min(1)).min(1, 'at least one participant id is required'),
  }),
});
export type IframeRequest = z.infer<typeof IframeRequest>;

export const IframeResponse = z.object({ url: z.url({ protocol: /^https?$/ }) });
export type IframeResponse = z.infer<typeof IframeResponse>;

// ---------------------------------------------------------------- Webhook (6)

export { ESIGN_COMPLETED_EVENT };

/** Any provider event: enough to acknowledge and log one we do not act on. */
export const WebhookEnvelope = z.object({
  event: z.string().min(1),
  entity: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
});
export type WebhookEnvelope = z.infer<typeof WebhookEnvelope>;

// The ids of src/esign/events.ts's registry, each a UUID.
const EventData = z.object({
  notificationId: Uuid,
  entity_id: Uuid,
  // A UUID like every id the provider issues: the bridge and the worker put it in the provider's URL path.
  transaction_id: Uuid,
} satisfies Record<(typeof EVENT_DATA_IDS)[number], z.ZodType>);

export const EsignCompletedWebhook = z.object({
  event: z.literal(ESIGN_COMPLETED_EVENT),
  entity: z.literal('esign'),
  data: EventData,
});
export type EsignCompletedWebhook = z.infer<typeof EsignCompletedWebhook>;

/** Any event that ends a transaction, in `esign-completed`'s envelope (docs/spec-gaps.md, row 32). */
export const EsignEndWebhook = z.object({
  event: z.enum(ESIGN_END_EVENTS),
  entity: z.literal('esign'),
  data: EventData,
});
export type EsignEndWebhook = z.infer<typeof EsignEndWebhook>;

/** A participant's progress: the same envelope, naming the participant (docs/spec-gaps.md, row 37). */
export const EsignParticipantWebhook = z.object({
  event: z.enum(ESIGN_PARTICIPANT_EVENTS),
  entity: z.literal('esign'),
  data: EventData.extend({ [PARTICIPANT_DATA_ID]: z.string().min(1) }),
});
export type EsignParticipantWebhook = z.infer<typeof EsignParticipantWebhook>;

/** Every event the bridge forwards. */
export const EsignWebhook = z.discriminatedUnion('event', [EsignEndWebhook, EsignParticipantWebhook]);
export type EsignWebhook = EsignEndWebhook | EsignParticipantWebhook;

// ------------------------------------------------- Errors (RFC 9457, chosen)

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const ProblemDetails = z.looseObject({
  type: z.string().optional(),
  title: z.string().optional(),
  status: z.number().int().optional(),
  detail: z.string().optional(),
  instance: z.string().optional(),
  errors: z.array(z.object({ pointer: z.string(), detail: z.string() })).optional(),
});
export type ProblemDetails = z.infer<typeof ProblemDetails>;
