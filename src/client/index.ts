/**
 * The client package's public API (`@esign-orchestrator/client`, built from this file by `npm run build:client`
 * into packages/client/dist): what a backend needs to start and follow transactions, templates and bulk sends,
 * to verify the events sent to it, and to encrypt payloads as the workers expect. Nothing it reaches imports a
 * server library (fastify, SQLite, PDF, PKI, the AWS SDK): test/client/client-package.test.ts checks the packed tarball.
 */

// Transactions: start (idempotent per referenceId), follow, signing URLs, cancel, an archive retried.
export {
  approveEsignTransaction,
  cancelEsignTransaction,
  correctEsignTransaction,
  getEsignStatus,
  getEsignTransaction,
  InvalidApproval,
  InvalidCorrection,
  InvalidTransactionInput,
  issueSigningUrl,
  LateCompletionEnded,
  rejectEsignTransaction,
  retryEsignArchive,
  startEsignTransaction,
} from './transactions.js';
export type { StartedTransaction, StartOptions } from './transactions.js';
export {
  approveUpdate,
  cancelUpdate,
  correctTransactionUpdate,
  DEFAULT_TASK_QUEUE,
  issueSigningUrlUpdate,
  rejectUpdate,
  replaceTransactionUpdate,
  retryArchiveUpdate,
  statusQuery,
  WORKFLOW_TYPE,
  workflowIdFor,
} from '../definitions/transaction.js';
export type {
  ArchiveResult,
  EsignOutcome,
  EsignPhase,
  EsignRunFailure,
  EsignTransactionResult,
  EsignTransactionStatus,
  EsignTransactionWorkflow,
  IntegratorEventBody,
  IntegratorEventType,
  IssuedSigningUrl,
  IssueSigningUrlRequest,
  ReplaceTransactionRequest,
} from '../definitions/transaction.js';
export { CORRECTION_KINDS } from '../definitions/corrections.js';
export type {
  AddedTag,
  CorrectionKind,
  CorrectionRecord,
  CorrectionResult,
  NewPerson,
  TransactionCorrection,
} from '../definitions/corrections.js';
export { TransactionCorrection as TransactionCorrectionSchema } from '../transaction/corrections.js';
export { MAX_APPROVERS } from '../definitions/approvals.js';
export type {
  ApprovalAnswer,
  ApprovalRecord,
  ApprovalRequest,
  ApprovalStatus,
  Approver,
  RejectionRequest,
} from '../definitions/approvals.js';
export { ApprovalRequest as ApprovalRequestSchema, RejectionRequest as RejectionRequestSchema } from '../transaction/approvals.js';
// Records: legal holds, and the Schedule of the purge (docs/records.md).
export { ensureRecordsRetentionSchedule, listLegalHolds, placeLegalHold, releaseLegalHold } from './records.js';
export { HOLD_SCOPES, LEGAL_HOLDS_WORKFLOW_ID } from '../definitions/records.js';
export type { HoldRequest, HoldScope, LegalHold, Purged, ReleaseRequest, Retention } from '../definitions/records.js';
export type { ArchiveEvidence, DocumentEvidence, SignatureEvidence, ValidationReport } from '../evidence/report.js';
export {
  ApprovalInput,
  DocumentInput,
  DocumentSource,
  DurationInput,
  EsignTransactionInput,
  ParticipantInput,
  REFERENCE_ID,
  REFERENCE_ID_RULE,
  TagInput,
} from '../transaction/input.js';
export type { ValidEsignTransactionInput } from '../transaction/input.js';
export {
  EsignBatchId,
  EsignId,
  EsignReferenceId,
  esignSearchAttributes,
  EsignSignedCount,
  EsignStatus,
  EsignTransactionId,
  EsignWaitingFor,
} from '../definitions/search-attributes.js';

// Events sent to the transaction's callbackUrl: verifying them, and the event log (what was sent, redelivery).
export { EsignEventRejected, EsignEventVerifier } from './events.js';
export type { VerifiedEsignEvent } from './events.js';
export { EventLogUnreadable, listEsignEvents, NoEventLog, redeliverEsignEvents } from './event-log.js';
export { eventLogIdFor, eventLogQuery, redeliverEventsUpdate } from '../definitions/event-log.js';
export type { DeliveryAttempt, EndpointHealth, EventLogView, LoggedEvent, RedeliverRequest } from '../definitions/event-log.js';

// Templates: read from a directory (or any store with `get`), filled and started; created with `esign template create`.
export { startFromTemplate } from './templates.js';
export type { StartedFromTemplate } from './templates.js';
export { LocalTemplateReader } from '../templates/local-reader.js';
export { KeyedTemplateReader, parseTemplateRef } from '../templates/reader.js';
export type { StoredTemplate, TemplateReader, TemplateSummary } from '../templates/reader.js';
export { instantiate, participantIdFor } from '../templates/instantiate.js';
export { TemplateOverrides } from '../templates/request.js';
export type { RoleValue, TemplateRequest } from '../templates/request.js';
export { TemplateDocumentNotFound, TemplateInputError, TemplateNotFound } from '../templates/errors.js';
export type { TemplateProblem, TemplateProblemKind } from '../templates/errors.js';

// Bulk send: a template and a CSV, one transaction per row.
export { BatchEnded, batchProgress, cancelBatch, getBatch, sendBulk } from './bulk.js';
export type { BulkSendRequest, SubmittedBatch } from './bulk.js';
export type { BulkTemplates } from '../bulk/template-rows.js';
export { LocalObjectStore } from '../storage/object-store.js';
export type { ObjectStore } from '../storage/object-store.js';
export { BULK_WORKFLOW_TYPE, DEFAULT_ROWS_PER_SECOND, MIN_ROWS_PER_SECOND } from '../definitions/bulk.js';
export type { BatchCounts, BatchPhase, BatchProgress, BatchResult, BulkSendWorkflow, InvalidRow } from '../definitions/bulk.js';

// The payload codec (docs/codec.md): workers refuse payloads that are not encrypted with their keys.
export { AesGcmCodec, ENCRYPTED_ENCODING, newCodecKeys, parseCodecKeys } from '../codec/aes-gcm-codec.js';
export type { CodecKey } from '../codec/aes-gcm-codec.js';
export { codecKeysFromEnv, dataConverterFromEnv, devCodecKeysFile } from '../codec/data-converter.js';
export { CodecKeyUnknown } from './codec-check.js';
export { PayloadUndecodable } from '../codec/aes-gcm-codec.js';
export { DataKeyMissing, PayloadErased } from '../codec/data-keys.js';
export { KeyStoreMissing } from '../codec/key-store.js';
export type { DataKeyRecord, KeyStore, KeyStoreIdentity } from '../codec/key-store.js';
export { connectEsignClient, TemporalUnreachable } from './connect.js';
export type { ConnectOptions } from './connect.js';

// A backend's integration tests: sign or decline in the provider sandbox, by referenceId, without a browser.
export { actInSandbox, NotTheSandbox, SandboxActRefused } from './sandbox.js';
export type { SandboxActOptions } from './sandbox.js';

// Typed failures.
export { FailureType } from '../failures.js';
export { failureTypeOf } from './failures.js';

// A backend's whole path (issue 40): documents through the workers' object store, the archive fetched and checked.
export { DocumentRefused, objectStoreFromEnv, uploadDocument } from './documents.js';
export type { UploadDocumentOptions, UploadedDocument } from './documents.js';
export { DEFAULT_MAX_DOCUMENT_BYTES, documentObjectKey } from '../storage/documents.js';
export { S3HttpClient, S3HttpObjectStore, S3RequestFailed } from '../storage/s3-http.js';
export type { S3Credentials, S3HttpClientOptions, S3ObjectReader } from '../storage/s3-http.js';
export { ArchiveDownloadRefused, downloadArchive } from './archive.js';
export type { DownloadArchiveOptions, DownloadedArchive } from './archive.js';
export type { ArchiveManifest, EvidenceRenewal } from '../archive/manifest.js';
