import type { EsignClient } from '../src/esign/client.js';
import { createArchiveActivities } from './archive.js';
import { createBulkActivities } from './bulk.js';
import type { ObjectStore } from '../src/storage/object-store.js';
import { DEFAULT_TASK_QUEUE } from '../src/definitions/transaction.js';
import type { ArchiveStore } from '../src/archive/store.js';
import { createCompletionActivities, type CallbackDelivery } from './completion.js';
import { createDocumentActivities } from './documents.js';
import { createEvidenceUpkeepActivities, type EvidenceUpkeepDeps } from './evidence-upkeep.js';
import { createInboxActivities } from './inbox.js';
import { createInputValidationActivities } from './input-validation.js';
import { createTransactionActivities } from './transactions.js';
import { durationToMs } from '../src/util/duration.js';
import { CallbackSigner } from './support/callback-signer.js';
import { UrlPolicy } from './support/url-policy.js';
import { createRecordsActivities, type RecordsDeps } from './records.js';
import type { ZipLimits } from '../src/archive/zip-verify.js';
import type { EvidencePolicy } from '../src/archive/evidence.js';
import type { TemplateStore } from '../src/templates/index.js';

export interface ActivityDeps {
  client: EsignClient;
  archive: ArchiveStore;
  /** Directories local document paths may be read from. */
  documentRoots?: readonly string[];
  /** Origins or hosts that document URLs and callback URLs may point at. */
  allowedUrls?: readonly string[];
  maxDocumentBytes?: number;
  zipLimits?: ZipLimits;
  /** The retention of an archive whose transaction names none (default 10 years; docs/records.md). */
  retention?: string;
  /** What a completed ZIP must prove before it is archived; nothing is checked beyond the ZIP itself when unset. */
  evidence?: EvidencePolicy;
  /** The integrator's `whsec_` secrets: events to callback URLs are signed with each (several during a rotation). */
  callbackSecrets?: readonly string[];
  /** How hard an event is tried before its log marks it failed (default: 20 attempts over about an hour and a half). */
  callbackDelivery?: CallbackDelivery;
  /** The shortest reconciliation interval a transaction may ask for (default 1 minute). */
  minReconcileInterval?: string | number;
  /** Templates' documents (ESIGN_TEMPLATE_STORE); without it, a transaction naming one fails with StoreNotConfigured. */
  templates?: TemplateStore;
  /** Where renewals of archived evidence take their time-stamps and revocation data, and when they are due. */
  upkeep?: EvidenceUpkeepDeps['upkeep'];
  /**
   * Bulk send's files (a batch's CSV, pages and result) and documents uploaded by backends (`{object: {sha256}}`
   * sources), kept where the templates are (ESIGN_TEMPLATE_STORE); without it, such a source fails with StoreNotConfigured.
   */
  objects?: ObjectStore;
  /** The worker's task queue: a batch's transactions run there unless the batch names another. */
  taskQueue?: string;
  /**
   * The legal holds register's answer (src/client/records.ts `listLegalHolds`): without it, nothing is purged, and
   * a new archive a hold covers is not held by the store itself.
   */
  holds?: RecordsDeps['holds'];
}

/** All activities of the transaction workflow, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  const urlPolicy = new UrlPolicy(deps.allowedUrls ?? []);
  const callbackSigner = deps.callbackSecrets && deps.callbackSecrets.length > 0 ? new CallbackSigner(deps.callbackSecrets) : undefined;
  return {
    ...createInputValidationActivities({
      urlPolicy,
      minReconcileMs: durationToMs(deps.minReconcileInterval ?? '1 minute'),
      canSignCallbacks: callbackSigner !== undefined,
      requireUploadHashes: deps.evidence?.signatures === 'require',
    }),
    ...createDocumentActivities({
      client: deps.client,
      documentRoots: deps.documentRoots ?? [],
      urlPolicy,
      maxDocumentBytes: deps.maxDocumentBytes ?? 25 * 1024 * 1024,
      ...(deps.templates ? { templates: deps.templates } : {}),
      ...(deps.objects ? { objects: deps.objects } : {}),
    }),
    ...createTransactionActivities({ client: deps.client }),
    ...createArchiveActivities({
      client: deps.client,
      archive: deps.archive,
      ...(deps.zipLimits ? { zipLimits: deps.zipLimits } : {}),
      ...(deps.retention ? { retention: deps.retention } : {}),
      ...(deps.evidence ? { evidence: deps.evidence } : {}),
      ...(deps.holds ? { holds: deps.holds } : {}),
    }),
    ...createCompletionActivities({
      urlPolicy,
      ...(callbackSigner ? { callbackSigner } : {}),
      ...(deps.callbackDelivery ? { callbackDelivery: deps.callbackDelivery } : {}),
    }),
    ...createInboxActivities(),
    ...createEvidenceUpkeepActivities({ archive: deps.archive, ...(deps.upkeep ? { upkeep: deps.upkeep } : {}) }),
    ...createRecordsActivities({ archive: deps.archive, ...(deps.holds ? { holds: deps.holds } : {}) }),
    ...createBulkActivities({
      ...(deps.objects ? { store: deps.objects } : {}),
      ...(deps.templates ? { templates: deps.templates } : {}),
      taskQueue: deps.taskQueue ?? DEFAULT_TASK_QUEUE,
    }),
  };
}

export type EsignActivities = ReturnType<typeof createActivities>;
