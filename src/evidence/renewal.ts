import { PDF, type RevocationProvider, type TimestampAuthority } from '@libpdf/core';
import * as pkijs from 'pkijs';
import { withGlobalFetchRefused } from '../http/outbound.js';
import { readSignedData } from './cms-read.js';
import { findSeal, readLongTermData } from './long-term.js';
import { checkPdfSignature, type PdfSignatureCheck } from './pades-verify.js';
import { wholePdf } from './pdf-bytes.js';
import type { TrustPolicy } from './trust.js';

/**
 * Renewal of a sealed PDF's long-term evidence (PAdES B-LTA upkeep, ETSI EN 319 142-1 5.5): before the newest
 * time-stamp's certificate chain ends, fresh validation data for everything the file's signatures and
 * time-stamps rely on and a new document time-stamp over all of it are appended as incremental updates. The
 * new time-stamp proves the old evidence existed while it could still be validated, and so on, for decades.
 */

/** Where a renewal takes its time-stamp and revocation data from (@libpdf/core's interfaces). */
export interface RenewalSources {
  timestampAuthority: TimestampAuthority;
  /**
   * Asked about every certificate of every signature in the file, a caller's planted one included. One that can
   * judge whose certificate it is (HttpRevocationProvider) is handed the file's own certificates, to complete the
   * paths of those it serves.
   */
  revocationProvider: RevocationProvider & { withCertificates?(certificates: readonly Uint8Array[]): RevocationProvider };
}

/** When a sealed PDF's evidence must be renewed, and what the renewal's check must find. */
export interface RenewalPolicy {
  /** The archive's own trust: a renewal is judged by the same checks as the archive's, and refused when they refuse it. */
  trust: TrustPolicy;
  /** Renew when the newest time-stamp's chain ends within this many milliseconds. */
  horizonMs: number;
  /**
   * Renew too when the newest time-stamp is older than this (an algorithm retired, an authority distrusted):
   * how an operator sweeps the whole archive.
   */
  renewTimestampedBefore?: Date | undefined;
}

export type RenewalVerdict =
  | { due: false; check: PdfSignatureCheck }
  | { due: true; reason: 'expiring' | 'requested'; check: PdfSignatureCheck }
  /** The evidence does not hold now: a renewal would time-stamp what nobody can validate, so none is made. */
  | { due: 'lapsed'; problems: string[]; check: PdfSignatureCheck };

/** Why a renewal was not kept: what it produced did not pass the same checks as the archive's. */
export class RenewalRefused extends Error {
  override readonly name = 'RenewalRefused';
}

/** Whether `pdf`'s evidence must be renewed at `at`, judged with the archive's own checks. */
export async function renewalVerdict(pdf: Buffer, policy: RenewalPolicy, at: Date): Promise<RenewalVerdict> {
  const check = await checkPdfSignature(pdf, policy.trust, at);
  if (check.indication !== 'TOTAL_PASSED' || !check.evidenceExpiresAt) {
    const problems = check.problems.length > 0 ? check.problems : [`the evidence is ${check.indication} (${check.subIndication ?? ''})`];
    return { due: 'lapsed', problems, check };
  }
  if (Date.parse(check.evidenceExpiresAt) - at.getTime() <= policy.horizonMs) return { due: true, reason: 'expiring', check };
  const newest = check.archiveTimestamps.at(-1) ?? check.timestamp?.time;
  if (policy.renewTimestampedBefore && newest && Date.parse(newest) < policy.renewTimestampedBefore.getTime()) {
    return { due: true, reason: 'requested', check };
  }
  return { due: false, check };
}

/**
 * Appends validation data and a document time-stamp to `pdf`, then checks the result as the archive would at
 * `at`: the original bytes untouched at its start, every signature and time-stamp valid and trusted, one more
 * document time-stamp, evidence that lasts longer than before. Throws RenewalRefused otherwise.
 */
export async function renewEvidence(
  pdf: Buffer,
  sources: RenewalSources,
  policy: RenewalPolicy,
  at: Date,
): Promise<{ pdf: Buffer; check: PdfSignatureCheck }> {
  const before = await checkPdfSignature(pdf, policy.trust, at);
  if (before.indication !== 'TOTAL_PASSED') {
    throw new RenewalRefused(`the evidence does not hold at ${at.toISOString()}: ${before.problems.join('; ') || before.indication}`);
  }
  let renewed: Buffer;
  try {
    const doc = await PDF.load(pdf);
    const revocationProvider = sources.revocationProvider.withCertificates
      ? sources.revocationProvider.withCertificates(await evidenceCertificates(pdf))
      : sources.revocationProvider;
    // @libpdf/core walks the AIA caIssuers URL of every signature's certificates with globalThis.fetch, the
    // signature a caller planted in its document included, and takes no fetch of ours: it gets one that refuses.
    // The renewal needs no such walk: the file already verified, so the paths it relies on are in it.
    const { bytes } = await withGlobalFetchRefused(() =>
      doc.addArchivalData({ timestampAuthority: sources.timestampAuthority, revocationProvider }),
    );
    renewed = Buffer.from(bytes);
  } catch (err) {
    throw new RenewalRefused(`the renewal could not be made: ${(err as Error).message}`);
  }
  if (renewed.length <= pdf.length || !renewed.subarray(0, pdf.length).equals(pdf)) {
    throw new RenewalRefused('the renewal rewrote the file instead of appending to it');
  }
  const after = await checkPdfSignature(renewed, policy.trust, at);
  const refusals = [
    ...after.problems,
    ...(after.level === 'B-LTA' ? [] : [`the renewed file is ${after.level ?? 'unsigned'}, not B-LTA`]),
    ...(after.archiveTimestamps.length === before.archiveTimestamps.length + 1 ? [] : ['the new document time-stamp does not hold']),
    ...(after.evidenceExpiresAt && before.evidenceExpiresAt && after.evidenceExpiresAt > before.evidenceExpiresAt
      ? []
      : [
          `the new time-stamp's certificate chain ends ${after.evidenceExpiresAt ?? '(unknown)'}, no later than the one it renews (${before.evidenceExpiresAt ?? 'unknown'}): renew with an authority whose certificate lasts longer`,
        ]),
  ];
  if (refusals.length > 0 || after.indication !== 'TOTAL_PASSED') {
    throw new RenewalRefused(`the renewed file does not verify: ${refusals.join('; ') || after.indication}`);
  }
  return { pdf: renewed, check: after };
}

/** id-aa-signatureTimeStampToken: the seal's own time-stamp, whose authority's certificates it carries. */
const SIGNATURE_TIMESTAMP = '1.2.840.113549.1.9.16.2.14';

/** The certificates the seal, its time-stamp, the document time-stamps and the /DSS carry (DER). */
async function evidenceCertificates(pdf: Buffer): Promise<Uint8Array[]> {
  const bytes = wholePdf(pdf);
  const found = findSeal(bytes);
  if ('problem' in found) return [];
  const certificates: Uint8Array[] = [];
  const tokens: Buffer[] = [];
  try {
    const longTerm = await readLongTermData(bytes, found.seal);
    certificates.push(...longTerm.dss.certs);
    tokens.push(...longTerm.documentTimestamps.map((t) => t.token));
  } catch {
    // Checked before the renewal: what cannot be read here adds nothing.
  }
  for (const cms of [found.seal.contents, ...tokens]) certificates.push(...cmsCertificates(cms, true));
  return certificates;
}

function cmsCertificates(der: Uint8Array, withTimestamp: boolean): Uint8Array[] {
  try {
    const signedData = readSignedData(der);
    const found: Uint8Array[] = (signedData.certificates ?? [])
      .filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate)
      .map((c) => new Uint8Array(c.toSchema().toBER(false)));
    if (withTimestamp) {
      for (const attr of signedData.signerInfos[0]?.unsignedAttrs?.attributes ?? []) {
        if (attr.type !== SIGNATURE_TIMESTAMP) continue;
        for (const token of attr.values as { toBER(sizeOnly?: boolean): ArrayBuffer }[]) {
          found.push(...cmsCertificates(new Uint8Array(token.toBER(false)), false));
        }
      }
    }
    return found;
  } catch {
    return [];
  }
}
