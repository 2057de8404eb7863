import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { DURATION_PATTERN, durationToMs } from '../util/duration.js';
import { envBool, envList, parseEnv } from '../util/env.js';
import { parseCertificates } from '../evidence/pki.js';
import { parsePin } from '../evidence/trust.js';
import type { EvidencePolicy } from '../archive/evidence.js';
import { DEFAULT_ZIP_LIMITS, type ZipLimits } from '../archive/zip-verify.js';
import { DEFAULT_TASK_QUEUE } from '../definitions/transaction.js';
import { ProviderEnv, providerSettings } from '../esign/provider-env.js';
import { templateStoreSetting, type TemplateStoreSetting } from '../templates/env.js';

/** Environment of the worker (Temporal connection settings come from @temporalio/envconfig: TEMPORAL_ADDRESS, …). */
export const WorkerEnv = z.object({
  ESIGN_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  ...ProviderEnv.shape,
  ESIGN_ARCHIVE_DIR: z.string().default('.data/archive'),
  /** How often the records retention's Schedule purges what is due (docs/records.md); `off`: no Schedule. */
  ESIGN_ARCHIVE_PURGE_EVERY: z
    .string()
    .trim()
    .refine((v) => v === 'off' || DURATION_PATTERN.test(v), 'must be a duration such as "1 day", or off')
    .default('1 day'),
  /** How long an archive is kept when its transaction names no retention (docs/records.md). */
  ESIGN_ARCHIVE_RETENTION: z.string().trim().regex(DURATION_PATTERN, 'must be a duration such as "10 years"').default('10 years'),
  /** When set, archives go to this S3-compatible bucket instead of ESIGN_ARCHIVE_DIR (credentials: the AWS default chain). */
  ESIGN_ARCHIVE_S3_BUCKET: z.string().min(1).optional(),
  ESIGN_ARCHIVE_S3_PREFIX: z.string().default(''),
  ESIGN_ARCHIVE_S3_ENDPOINT: z.url().optional(),
  ESIGN_ARCHIVE_S3_REGION: z.string().default('us-east-1'),
  /** S3 Object Lock retention of the ZIPs and renewed PDFs (the bucket must have Object Lock); with _DAYS, or neither. */
  ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE: z.enum(['GOVERNANCE', 'COMPLIANCE']).optional(),
  ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS: z.coerce.number().int().positive().max(36_500, 'must be at most 36500 (100 years)').optional(),
  ESIGN_DOCUMENT_ROOTS: envList,
  ESIGN_ALLOWED_URLS: envList,
  /**
   * Hosts of ESIGN_ALLOWED_URLS that may resolve to loopback, private or link-local addresses (a document store or a
   * callback receiver on the internal network). An entry that is itself an IP address or `localhost` needs no mention.
   */
  ESIGN_ALLOWED_INTERNAL_HOSTS: envList,
  ESIGN_MAX_DOCUMENT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  /**
   * What a completed ZIP may hold before it is refused unread (src/archive/zip-verify.ts): entries, bytes once
   * uncompressed, and the uncompressed/compressed ratio of any entry (a zip bomb's mark).
   */
  ESIGN_ZIP_MAX_ENTRIES: z.coerce.number().int().positive().default(DEFAULT_ZIP_LIMITS.maxEntries),
  ESIGN_ZIP_MAX_UNCOMPRESSED_BYTES: z.coerce.number().int().positive().default(DEFAULT_ZIP_LIMITS.maxTotalUncompressed),
  // At least 1: an entry stored without compression has a ratio of 1, so a lower limit would refuse every ZIP.
  ESIGN_ZIP_MAX_RATIO: z.coerce.number().finite().min(1).default(DEFAULT_ZIP_LIMITS.maxRatio),
  ESIGN_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().positive().default(100),
  ESIGN_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().positive().default(40),
  // A transaction spends most of its life waiting for signers: a cached one costs about 0.6 MiB and saves only a
  // replay of a short history when its next event comes. 2,000 waiting on one worker: 950 MiB of RSS with 250,
  // 1,126 with 1,000, and the burst that completed them all was no slower (BENCH_WAITING_N=2000
  // BENCH_WAITING_CACHE=250,1000 npm run bench -- waiting; docs/benchmarks.md).
  ESIGN_MAX_CACHED_WORKFLOWS: z.coerce.number().int().nonnegative().default(250),
  ESIGN_SHUTDOWN_GRACE: z.string().default('30 seconds'),
  /** The integrator's whsec_ secrets for signing events to callback URLs (several during a rotation). */
  ESIGN_CALLBACK_SECRETS: envList.pipe(z.array(z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be whsec_ secrets'))),
  /** How many times an event is tried (1 s doubling to 5 minutes between) before its log marks it failed. */
  ESIGN_CALLBACK_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(20),
  /** Transactions asking for a shorter reconciliation interval get this one. */
  ESIGN_MIN_RECONCILE_INTERVAL: z.string().regex(DURATION_PATTERN, 'must be a duration such as "1 minute"').default('1 minute'),
  /** PEM file(s) of the CA certificates the provider's seals must chain to (the sandbox's: GET /sandbox/ca.pem). */
  ESIGN_TRUST_ANCHORS: envList,
  /** The provider's sealing keys, by SPKI SHA-256 (`sha256/<base64>` or hex); the sandbox's: GET /sandbox/pins. */
  ESIGN_SEAL_PINS: envList,
  /** A file of pins, one per line (what GET /sandbox/pins serves); read with ESIGN_SEAL_PINS. */
  ESIGN_SEAL_PINS_FILE: z.string().min(1).optional(),
  /** PEM file(s) of the CAs time-stamping authorities must chain to; default: ESIGN_TRUST_ANCHORS. */
  ESIGN_TSA_TRUST_ANCHORS: envList,
  /** off, warn or require (the default, which needs ESIGN_TRUST_ANCHORS and ESIGN_SEAL_PINS). */
  ESIGN_SIGNATURE_VERIFICATION: z.enum(['off', 'warn', 'require']).optional(),
  /** Refuse a completed ZIP without the provider's certificate of completion and audit trail; default: under require. */
  ESIGN_REQUIRE_COMPLETION_CERTIFICATE: envBool.optional(),
  /** The RFC 3161 authority the evidence upkeep renews time-stamps with; no upkeep Schedule without it (docs/evidence.md). */
  ESIGN_EVIDENCE_TSA_URL: z.url({ protocol: /^https?$/ }).optional(),
  ESIGN_EVIDENCE_OCSP_URL: z.url({ protocol: /^https?$/ }).optional(),
  ESIGN_EVIDENCE_CRL_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Renew when the newest time-stamp's certificate chain ends within this. */
  ESIGN_EVIDENCE_RENEW_BEFORE: z.string().regex(DURATION_PATTERN, 'must be a duration such as "180 days"').default('180 days'),
  /** Renew every PDF whose newest time-stamp is older than this date (an algorithm retired, an authority distrusted). */
  ESIGN_EVIDENCE_RENEW_TIMESTAMPED_BEFORE: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
  ESIGN_EVIDENCE_UPKEEP_EVERY: z.string().regex(DURATION_PATTERN, 'must be a duration such as "1 day"').default('1 day'),
  /** Worker Versioning (docs/operations.md): the Worker Deployment this worker belongs to; unversioned when unset. */
  ESIGN_WORKER_DEPLOYMENT: z.string().min(1).max(200).optional(),
  /** The build id of this worker's version; default: the package version and the SHA-256 of the workflow bundle. */
  ESIGN_WORKER_BUILD_ID: z
    .string()
    .regex(/^[A-Za-z0-9._+-]{1,200}$/, 'letters, digits and . _ + - only')
    .optional(),
  /** Make this worker's version the deployment's current one once it polls (the dev stack's single worker does). */
  ESIGN_WORKER_SET_CURRENT: envBool.default(false),
  /** A prebuilt workflow bundle (npm run build:workflows); the workflows are bundled at start when unset. */
  ESIGN_WORKFLOW_BUNDLE: z.string().optional(),
});

export interface WorkerConfig {
  taskQueue: string;
  providerUrl: string;
  /** Read lazily so a rotated token file is picked up. Never logged. */
  providerToken: () => string | Promise<string>;
  providerCa: string | undefined;
  archiveDir: string;
  /** The retention of an archive whose transaction names none. */
  retention: string;
  /** How often the purge's Schedule runs; undefined: no Schedule. */
  purgeEvery: string | undefined;
  s3:
    | {
        bucket: string;
        prefix: string;
        endpoint: string | undefined;
        region: string;
        objectLock: { mode: 'GOVERNANCE' | 'COMPLIANCE'; days: number } | undefined;
      }
    | undefined;
  documentRoots: string[];
  allowedUrls: string[];
  /** Hosts of allowedUrls that may resolve to internal addresses (src/http/outbound.ts). */
  allowedInternalHosts: string[];
  maxDocumentBytes: number;
  zipLimits: ZipLimits;
  minReconcileInterval: string;
  /** Never logged. */
  callbackSecrets: string[];
  callbackAttempts: number;
  tuning: {
    maxConcurrentActivityTaskExecutions: number;
    maxConcurrentWorkflowTaskExecutions: number;
    maxCachedWorkflows: number;
    shutdownGraceTime: string;
  };
  workflowBundlePath: string | undefined;
  evidence: EvidencePolicy;
  /** ESIGN_TEMPLATE_STORE: where template documents are read from; absent when unset. */
  templateStore: TemplateStoreSetting | undefined;
  /** Worker Versioning: absent for an unversioned worker. `buildId` undefined: derived from the workflow bundle. */
  deployment: { name: string; buildId: string | undefined; setCurrent: boolean } | undefined;
  /** The evidence upkeep: absent without a time-stamping authority. */
  upkeep:
    | {
        tsaUrl: string;
        ocspUrl: string | undefined;
        crlUrl: string | undefined;
        renewBeforeMs: number;
        renewTimestampedBefore: Date | undefined;
        every: string;
      }
    | undefined;
}

/** The evidence policy of ESIGN_TRUST_ANCHORS, ESIGN_SEAL_PINS, ESIGN_TSA_TRUST_ANCHORS, ESIGN_SIGNATURE_VERIFICATION and ESIGN_REQUIRE_COMPLETION_CERTIFICATE. */
function evidencePolicy(e: z.infer<typeof WorkerEnv>): EvidencePolicy {
  const certificates = (variable: string, files: readonly string[]) =>
    files.flatMap((file) => {
      const certs = parseCertificates(readFileSync(file, 'utf8'));
      if (certs.length === 0) throw new Error(`invalid worker configuration: ${variable} file ${file} holds no PEM certificate`);
      return certs;
    });
  const trustAnchors = certificates('ESIGN_TRUST_ANCHORS', e.ESIGN_TRUST_ANCHORS);
  const tsaAnchors =
    e.ESIGN_TSA_TRUST_ANCHORS.length > 0 ? certificates('ESIGN_TSA_TRUST_ANCHORS', e.ESIGN_TSA_TRUST_ANCHORS) : trustAnchors;
  const fromFile = e.ESIGN_SEAL_PINS_FILE ? readFileSync(e.ESIGN_SEAL_PINS_FILE, 'utf8').split(/\s+/).filter(Boolean) : [];
  const pins = [...e.ESIGN_SEAL_PINS, ...fromFile].map((pin) => {
    try {
      return parsePin(pin);
    } catch (err) {
      throw new Error(`invalid worker configuration: ESIGN_SEAL_PINS: ${(err as Error).message}`, { cause: err });
    }
  });
  // Fail closed: unless told otherwise, a completed PDF is archived only with a seal that chains to a trust anchor
  // and is made with one of the provider's pinned keys, so a worker without them does not start rather than
  // archive what it cannot verify (or what any other subscriber of the provider's CA could have sealed).
  const signatures = e.ESIGN_SIGNATURE_VERIFICATION ?? 'require';
  if (signatures === 'require' && trustAnchors.length === 0) {
    throw new Error(
      e.ESIGN_SIGNATURE_VERIFICATION
        ? 'invalid worker configuration: ESIGN_SIGNATURE_VERIFICATION=require needs ESIGN_TRUST_ANCHORS (the provider CA)'
        : 'invalid worker configuration: set ESIGN_TRUST_ANCHORS to the provider CA (PEM files) so seals can be verified, ' +
            'or ESIGN_SIGNATURE_VERIFICATION=warn (or off) to archive what is not verified',
    );
  }
  if (signatures === 'require' && pins.length === 0) {
    throw new Error(
      "invalid worker configuration: ESIGN_SIGNATURE_VERIFICATION=require needs ESIGN_SEAL_PINS, the provider's sealing keys " +
        '(sha256/<base64> of each SubjectPublicKeyInfo; the sandbox publishes its own at GET /sandbox/pins): without pins, ' +
        "any certificate the provider's CA issued could seal a forged document",
    );
  }
  // The sealed certificate of completion is what vouches for the audit trail, so `require` wants it unless told otherwise.
  return {
    signatures,
    trust: { seal: { anchors: trustAnchors, pins }, timestamping: tsaAnchors },
    requireCompletionCertificate: e.ESIGN_REQUIRE_COMPLETION_CERTIFICATE ?? signatures === 'require',
  };
}

/** ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE and _DAYS: both, for a bucket that is set, or neither. */
function objectLock(e: z.infer<typeof WorkerEnv>): { mode: 'GOVERNANCE' | 'COMPLIANCE'; days: number } | undefined {
  const mode = e.ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE;
  const days = e.ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS;
  if (mode === undefined && days === undefined) return undefined;
  if (mode === undefined || days === undefined) {
    throw new Error(
      'invalid worker configuration: S3 Object Lock needs both ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE (GOVERNANCE or COMPLIANCE) ' +
        `and ESIGN_ARCHIVE_S3_OBJECT_LOCK_DAYS (a number of days); only ${mode === undefined ? '_DAYS' : '_MODE'} is set`,
    );
  }
  if (!e.ESIGN_ARCHIVE_S3_BUCKET) {
    throw new Error(
      'invalid worker configuration: ESIGN_ARCHIVE_S3_OBJECT_LOCK_MODE and _DAYS apply to an S3 archive: set ESIGN_ARCHIVE_S3_BUCKET',
    );
  }
  return { mode, days };
}

export function workerConfigFromEnv(env: NodeJS.ProcessEnv = process.env, fallbackToken?: () => string | Promise<string>): WorkerConfig {
  const e = parseEnv(WorkerEnv, env, 'worker');
  const provider = providerSettings(e, 'worker', fallbackToken);
  const lock = objectLock(e);
  const evidence = evidencePolicy(e);
  return {
    taskQueue: e.ESIGN_TASK_QUEUE,
    ...provider,
    archiveDir: resolve(e.ESIGN_ARCHIVE_DIR),
    retention: e.ESIGN_ARCHIVE_RETENTION,
    purgeEvery: e.ESIGN_ARCHIVE_PURGE_EVERY === 'off' ? undefined : e.ESIGN_ARCHIVE_PURGE_EVERY,
    s3: e.ESIGN_ARCHIVE_S3_BUCKET
      ? {
          bucket: e.ESIGN_ARCHIVE_S3_BUCKET,
          prefix: e.ESIGN_ARCHIVE_S3_PREFIX,
          endpoint: e.ESIGN_ARCHIVE_S3_ENDPOINT,
          region: e.ESIGN_ARCHIVE_S3_REGION,
          objectLock: lock,
        }
      : undefined,
    documentRoots: e.ESIGN_DOCUMENT_ROOTS.map((r) => resolve(r)),
    allowedUrls: e.ESIGN_ALLOWED_URLS,
    allowedInternalHosts: e.ESIGN_ALLOWED_INTERNAL_HOSTS,
    maxDocumentBytes: e.ESIGN_MAX_DOCUMENT_BYTES,
    zipLimits: {
      maxEntries: e.ESIGN_ZIP_MAX_ENTRIES,
      maxTotalUncompressed: e.ESIGN_ZIP_MAX_UNCOMPRESSED_BYTES,
      maxRatio: e.ESIGN_ZIP_MAX_RATIO,
    },
    minReconcileInterval: e.ESIGN_MIN_RECONCILE_INTERVAL,
    callbackSecrets: e.ESIGN_CALLBACK_SECRETS,
    callbackAttempts: e.ESIGN_CALLBACK_ATTEMPTS,
    tuning: {
      maxConcurrentActivityTaskExecutions: e.ESIGN_MAX_CONCURRENT_ACTIVITIES,
      maxConcurrentWorkflowTaskExecutions: e.ESIGN_MAX_CONCURRENT_WORKFLOW_TASKS,
      maxCachedWorkflows: e.ESIGN_MAX_CACHED_WORKFLOWS,
      shutdownGraceTime: e.ESIGN_SHUTDOWN_GRACE,
    },
    workflowBundlePath: e.ESIGN_WORKFLOW_BUNDLE ? resolve(e.ESIGN_WORKFLOW_BUNDLE) : undefined,
    evidence,
    upkeep: upkeepConfig(e, evidence),
    templateStore: templateStoreSetting(env),
    deployment: deploymentConfig(e),
  };
}

/** ESIGN_WORKER_*: a build id or setting the current version means nothing without a deployment. */
function deploymentConfig(e: z.infer<typeof WorkerEnv>): WorkerConfig['deployment'] {
  if (!e.ESIGN_WORKER_DEPLOYMENT) {
    if (e.ESIGN_WORKER_BUILD_ID || e.ESIGN_WORKER_SET_CURRENT) {
      throw new Error('invalid worker configuration: ESIGN_WORKER_BUILD_ID and ESIGN_WORKER_SET_CURRENT need ESIGN_WORKER_DEPLOYMENT');
    }
    return undefined;
  }
  return { name: e.ESIGN_WORKER_DEPLOYMENT, buildId: e.ESIGN_WORKER_BUILD_ID, setCurrent: e.ESIGN_WORKER_SET_CURRENT };
}

/** ESIGN_EVIDENCE_*: the upkeep renews only what it can verify, so it needs the trust anchors the archive uses. */
function upkeepConfig(e: z.infer<typeof WorkerEnv>, evidence: EvidencePolicy): WorkerConfig['upkeep'] {
  if (!e.ESIGN_EVIDENCE_TSA_URL) return undefined;
  if (evidence.trust.seal.anchors.length === 0) {
    throw new Error(
      "invalid worker configuration: ESIGN_EVIDENCE_TSA_URL needs ESIGN_TRUST_ANCHORS (the provider CA and the TSA's): " +
        'a renewal is kept only when it verifies',
    );
  }
  return {
    tsaUrl: e.ESIGN_EVIDENCE_TSA_URL,
    ocspUrl: e.ESIGN_EVIDENCE_OCSP_URL,
    crlUrl: e.ESIGN_EVIDENCE_CRL_URL,
    renewBeforeMs: durationToMs(e.ESIGN_EVIDENCE_RENEW_BEFORE),
    renewTimestampedBefore: e.ESIGN_EVIDENCE_RENEW_TIMESTAMPED_BEFORE ? new Date(e.ESIGN_EVIDENCE_RENEW_TIMESTAMPED_BEFORE) : undefined,
    every: e.ESIGN_EVIDENCE_UPKEEP_EVERY,
  };
}
