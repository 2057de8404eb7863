import { constants, createHash, createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { algorithmProblems } from './certificate-policy.js';
import { encodedOnce, parsedOnce } from './der-memo.js';

/** Revocation data as found (a PDF's /DSS, a CMS's revocation values): DER OCSPResponse (RFC 6960) and CertificateList (RFC 5280). */
export interface RevocationSources {
  ocsps: readonly Buffer[];
  crls: readonly Buffer[];
}

export interface RevocationVerdict {
  /** unknown: no usable, fresh data about this certificate. */
  status: 'good' | 'revoked' | 'unknown';
  /** When revoked: the revocation time, and whether it is at or before `poe` (the signature existed after revocation: refused). */
  revokedAt?: string;
  revokedBeforePoe?: boolean;
  reason?: string;
  /** The source that decided (for the report), e.g. 'OCSP response produced 2026-…, thisUpdate …'. */
  source?: string;
  /** Why each piece of data was not used (wrong certificate, not signed by the issuer, stale, unreadable…), short sentences without personal data. */
  problems: string[];
}

/** At most this many OCSP responses, and this many CRLs, are considered; the rest are named in a problem. */
export const MAX_REVOCATION_SOURCES = 32;
/** A CRL (or an OCSP response) larger than this is not parsed. */
export const MAX_REVOCATION_BYTES = 4 * 1024 * 1024;
/** Data counts as issued after the signature existed when its thisUpdate is at most this much before the `poe`. */
const FRESH_SKEW_MS = 1000;
/** Bounds on the work one OCSP response can ask for. */
const MAX_SINGLE_RESPONSES = 256;
const MAX_RESPONDER_CANDIDATES = 8;

const OID = {
  ocspBasic: '1.3.6.1.5.5.7.48.1.1',
  ocspNonce: '1.3.6.1.5.5.7.48.1.2',
  ocspSigning: '1.3.6.1.5.5.7.3.9',
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  crlDistributionPoints: '2.5.29.31',
  crlNumber: '2.5.29.20',
  authorityKeyId: '2.5.29.35',
  deltaCrlIndicator: '2.5.29.27',
  issuingDistributionPoint: '2.5.29.28',
  reasonCode: '2.5.29.21',
  invalidityDate: '2.5.29.24',
  certificateIssuer: '2.5.29.29',
} as const;

/** CRLReason (RFC 5280 5.3.1); 7 is unused. */
const REASONS = [
  'unspecified',
  'keyCompromise',
  'cACompromise',
  'affiliationChanged',
  'superseded',
  'cessationOfOperation',
  'certificateHold',
  undefined,
  'removeFromCRL',
  'privilegeWithdrawn',
  'aACompromise',
] as const;
const CERTIFICATE_HOLD = 6;
const REMOVE_FROM_CRL = 8;
const KEY_USAGE_DIGITAL_SIGNATURE = 0;
const KEY_USAGE_CRL_SIGN = 6;

/** What one usable piece of data says. */
interface Finding {
  status: 'good' | 'revoked';
  thisUpdate: Date;
  revokedAt?: Date;
  reason?: string;
  source: string;
}

/** The CertID values the issuer's certificate gives, per hash (SHA-1 and SHA-256 only). */
interface Identity {
  names: Map<string, Buffer>;
  keys: Map<string, Buffer>;
  serial: string;
}

/**
 * What the revocation data says of `cert`, issued by `issuer` (which the caller has already chained to an anchor),
 * for a signature that existed at `poe` (the best signature time: the signature time-stamp's genTime), checked at
 * `at`. Data counts only when signed by `issuer` itself, or (OCSP) by a responder `issuer` delegated with
 * id-kp-OCSPSigning (RFC 6960 4.2.2.2), and only when issued after `poe` (less a second) and not after `at`: a
 * revocation before the signature would then show. A revocation, from any such source, wins over "good"; "good"
 * needs one such source; otherwise "unknown". Data that says "revoked" counts even when issued before `poe`
 * (a revocation is final), except a certificateHold (which can be lifted). `provenBy`: the time something other
 * than `cert`'s own key proves the signature existed, which a revocation must come after (default `poe`): a
 * time-stamping authority's token claims its genTime by the very key a revocation may say was compromised, so its
 * revocation is judged against the next time-stamp's time, or the time of checking. Never throws; reads nothing
 * but its arguments (no network).
 */
export async function revocationStatus(
  cert: pkijs.Certificate,
  issuer: pkijs.Certificate,
  sources: RevocationSources,
  poe: Date,
  at: Date,
  provenBy: Date = poe,
): Promise<RevocationVerdict> {
  const problems: string[] = [];
  const findings: Finding[] = [];
  let identity: Identity;
  try {
    identity = certIdentity(cert, issuer);
  } catch {
    return { status: 'unknown', problems: ['the certificate or its issuer cannot be read'] };
  }
  const ocsps = sources.ocsps.slice(0, MAX_REVOCATION_SOURCES);
  const crls = sources.crls.slice(0, MAX_REVOCATION_SOURCES);
  for (const [i, der] of ocsps.entries()) {
    const label = `OCSP response ${i + 1}`;
    try {
      const result = await fromOcsp(der, issuer, identity, poe, at);
      if (typeof result === 'string') problems.push(`${label} ${result}`);
      else findings.push(...result);
    } catch (err) {
      problems.push(`${label} cannot be checked: ${short(err)}`);
    }
  }
  if (sources.ocsps.length > ocsps.length)
    problems.push(`${sources.ocsps.length - ocsps.length} OCSP responses beyond the first ${MAX_REVOCATION_SOURCES} were not considered`);
  for (const [i, der] of crls.entries()) {
    const label = `CRL ${i + 1}`;
    try {
      const result = await fromCrl(der, cert, issuer, identity, poe, at);
      if (typeof result === 'string') problems.push(`${label} ${result}`);
      else findings.push(result);
    } catch (err) {
      problems.push(`${label} cannot be checked: ${short(err)}`);
    }
  }
  if (sources.crls.length > crls.length)
    problems.push(`${sources.crls.length - crls.length} CRLs beyond the first ${MAX_REVOCATION_SOURCES} were not considered`);

  const revoked = findings.filter((f) => f.status === 'revoked').sort((a, b) => a.revokedAt!.getTime() - b.revokedAt!.getTime())[0];
  if (revoked) {
    return {
      status: 'revoked',
      revokedAt: revoked.revokedAt!.toISOString(),
      revokedBeforePoe: revoked.revokedAt!.getTime() <= provenBy.getTime(),
      ...(revoked.reason ? { reason: revoked.reason } : {}),
      source: revoked.source,
      problems,
    };
  }
  const good = findings.filter((f) => f.status === 'good').sort((a, b) => b.thisUpdate.getTime() - a.thisUpdate.getTime())[0];
  if (good) return { status: 'good', source: good.source, problems };
  return { status: 'unknown', problems };
}

// ---------------------------------------------------------------------------------------------------------------
// OCSP (RFC 6960)

async function fromOcsp(der: Buffer, issuer: pkijs.Certificate, identity: Identity, poe: Date, at: Date): Promise<Finding[] | string> {
  if (der.length > MAX_REVOCATION_BYTES) return `is larger than ${MAX_REVOCATION_BYTES} bytes and was not read`;
  const response = parsedOnce('ocsp', der, () => parseWhole(der, (schema) => new pkijs.OCSPResponse({ schema })));
  if (!response) return 'is not a readable OCSPResponse';
  const status = response.responseStatus.valueBlock.valueDec;
  if (status !== 0) return `is not successful (responseStatus ${status})`;
  const bytes = response.responseBytes;
  if (!bytes) return 'carries no response';
  if (bytes.responseType !== OID.ocspBasic) return 'is not a basic OCSP response';
  if (bytes.response.idBlock.isConstructed) return 'is not DER';
  const inner = bytes.response.valueBlock.valueHexView;
  const basic = parsedOnce('ocsp-basic', inner, () => parseWhole(inner, (schema) => new pkijs.BasicOCSPResponse({ schema })));
  if (!basic) return 'does not hold a readable BasicOCSPResponse';
  const data = basic.tbsResponseData;

  // The SingleResponses about this very certificate (by its issuer's name and key, and its serial number).
  const singles = data.responses.slice(0, MAX_SINGLE_RESPONSES);
  const matching = singles.filter((single) => {
    const id = single.certID;
    const alg = id.hashAlgorithm.algorithmId;
    const name = identity.names.get(alg);
    const key = identity.keys.get(alg);
    if (!name || !key) return false;
    return (
      name.equals(Buffer.from(id.issuerNameHash.valueBlock.valueHexView)) &&
      key.equals(Buffer.from(id.issuerKeyHash.valueBlock.valueHexView)) &&
      integerKey(id.serialNumber) === identity.serial
    );
  });
  if (matching.length === 0) {
    return singles.length > 0 && singles.every((s) => !identity.names.has(s.certID.hashAlgorithm.algorithmId))
      ? 'identifies certificates with a hash other than SHA-1 or SHA-256'
      : 'is about another certificate';
  }
  const critical = [...(data.responseExtensions ?? []), ...matching.flatMap((s) => s.singleExtensions ?? [])].find(
    (e) => e.critical && e.extnID !== OID.ocspNonce,
  );
  if (critical) return `has a critical extension that is not understood (${critical.extnID})`;

  const signer = await ocspSigner(der, basic, issuer, at);
  if ('problem' in signer) return signer.problem;
  // The floor is judged at the time of checking, every time (a remembered signature included).
  for (const judged of signer.floors) {
    const floor = floorProblem(judged, at);
    if (floor) return weak({ floor });
  }

  const found: Finding[] = [];
  const reasons: string[] = [];
  const producedAt = data.producedAt;
  for (const single of matching) {
    const thisUpdate = single.thisUpdate;
    if (!validDate(thisUpdate) || !validDate(producedAt)) {
      reasons.push('has a date that cannot be read');
      continue;
    }
    if (thisUpdate.getTime() > at.getTime()) {
      reasons.push(`was issued (thisUpdate ${iso(thisUpdate)}) after the time of checking`);
      continue;
    }
    const nextUpdate = single.nextUpdate;
    if (nextUpdate !== undefined && (!validDate(nextUpdate) || nextUpdate.getTime() < thisUpdate.getTime())) {
      reasons.push('has a nextUpdate before its thisUpdate');
      continue;
    }
    const fresh = thisUpdate.getTime() >= poe.getTime() - FRESH_SKEW_MS;
    const source =
      `OCSP response produced ${iso(producedAt)}, thisUpdate ${iso(thisUpdate)}` +
      (nextUpdate ? `, nextUpdate ${iso(nextUpdate)}` : '') +
      `, signed by ${signer.by}`;
    const status = readCertStatus(single.certStatus);
    if (typeof status === 'string') {
      reasons.push(status);
    } else if (status.status === 'good') {
      if (fresh) found.push({ status: 'good', thisUpdate, source });
      else reasons.push(stale(thisUpdate, poe));
    } else {
      const usable = usableRevocation(status.revokedAt, status.reasonCode, thisUpdate, fresh, poe);
      if (typeof usable === 'string') reasons.push(usable);
      else found.push({ status: 'revoked', thisUpdate, revokedAt: status.revokedAt, ...reasonOf(status.reasonCode), source });
    }
  }
  return found.length > 0 ? found : (reasons[0] ?? 'says nothing usable');
}

type CertStatus = { status: 'good' } | { status: 'revoked'; revokedAt: Date; reasonCode: number | undefined } | string;

/** certStatus: good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT NULL. */
function readCertStatus(raw: unknown): CertStatus {
  const block = raw as asn1js.BaseBlock & { valueBlock: { value?: asn1js.BaseBlock[] } };
  if (!block || block.idBlock?.tagClass !== 3) return 'has a certStatus that cannot be read';
  switch (block.idBlock.tagNumber) {
    case 0:
      return { status: 'good' };
    case 2:
      return 'says the certificate is unknown to its responder';
    case 1: {
      const [time, reason] = block.valueBlock.value ?? [];
      if (!(time instanceof asn1js.GeneralizedTime)) return 'has a revocationTime that cannot be read';
      const revokedAt = time.toDate();
      if (!validDate(revokedAt)) return 'has a revocationTime that cannot be read';
      let reasonCode: number | undefined;
      if (reason) {
        const inner = (reason as asn1js.Constructed).valueBlock?.value?.[0];
        if (!(inner instanceof asn1js.Enumerated) || reason.idBlock.tagNumber !== 0) return 'has a revocationReason that cannot be read';
        reasonCode = inner.valueBlock.valueDec;
      }
      return { status: 'revoked', revokedAt, reasonCode };
    }
    default:
      return 'has a certStatus that cannot be read';
  }
}

/** A signature to hold to the cryptographic floor: its algorithm and who made it. */
interface Judged {
  what: string;
  algorithm: pkijs.AlgorithmIdentifier;
  signer: pkijs.Certificate;
}

/**
 * Who signed a basic OCSP response for `issuer`: the issuer itself (responderID its name or its key's SHA-1), or a
 * responder certificate the response carries that `issuer` issued and signed, for id-kp-OCSPSigning, valid at
 * producedAt. Remembered by the response's and the issuer's SHA-256 (the answer depends on those bytes alone),
 * with which certificate signed; the signatures' algorithms (`floors`, whose policy is dated), the dates and the
 * CertID are judged by the caller every time.
 */
async function ocspSigner(
  der: Buffer,
  basic: pkijs.BasicOCSPResponse,
  issuer: pkijs.Certificate,
  at: Date,
): Promise<{ by: string; floors: Judged[] } | { problem: string }> {
  const data = basic.tbsResponseData;
  const signedBy = (signer: number) => {
    const delegate = signer >= 0 ? basic.certs?.[signer] : undefined;
    if (!delegate) return { by: 'the issuer', floors: [{ what: RESPONSE, algorithm: basic.signatureAlgorithm, signer: issuer }] };
    return {
      by: 'a responder the issuer delegated',
      floors: [
        { what: RESPONSE, algorithm: basic.signatureAlgorithm, signer: delegate },
        { what: RESPONDER, algorithm: delegate.signatureAlgorithm, signer: issuer },
      ],
    };
  };
  const key = memoKey('ocsp', der, issuer);
  const known = key === undefined ? undefined : SIGNED.get(key);
  if (known !== undefined) return signedBy(known);

  const responder = data.responderID as unknown;
  const byName = responder instanceof pkijs.RelativeDistinguishedNames ? nameDer(responder) : undefined;
  const byKey = responder instanceof asn1js.OctetString ? Buffer.from(responder.valueBlock.valueHexView) : undefined;
  if (!byName && !byKey) return { problem: 'has a responderID that cannot be read' };
  const names = (c: pkijs.Certificate) => (byName ? byName.equals(nameDer(c.subject)) : byKey!.equals(keySha1(c)));

  let problem: string | undefined;
  if (names(issuer)) {
    const checked = checkSignature(
      { what: RESPONSE, algorithm: basic.signatureAlgorithm, signer: issuer },
      data.tbsView,
      basic.signature,
      at,
    );
    if (checked === true) return remember(key, -1, signedBy);
    problem = typeof checked === 'string' ? `is not signed by the certificate's issuer: ${checked}` : weak(checked);
  }
  const issuerId = tbsId(issuer);
  const candidates = (basic.certs ?? [])
    .map((cert, index) => ({ cert, index }))
    .filter(({ cert }) => names(cert) && tbsId(cert) !== issuerId)
    .slice(0, MAX_RESPONDER_CANDIDATES);
  for (const { cert: candidate, index } of candidates) {
    const why = delegatedResponderProblem(candidate, issuer, data.producedAt, at);
    if (why) {
      problem ??= `is signed by a responder the issuer did not delegate: ${why}`;
      continue;
    }
    const checked = checkSignature(
      { what: RESPONSE, algorithm: basic.signatureAlgorithm, signer: candidate },
      data.tbsView,
      basic.signature,
      at,
    );
    if (checked === true) return remember(key, index, signedBy);
    problem ??= typeof checked === 'string' ? `is not signed by its delegated responder: ${checked}` : weak(checked);
  }
  return { problem: problem ?? "is not signed by the certificate's issuer or a responder it delegated" };
}

const RESPONSE = "the OCSP response's signature";
const RESPONDER = "the signature on the OCSP responder's certificate";
const CRL_SIGNATURE = "the CRL's signature";

/** Why `responder` cannot answer for `issuer`'s certificates at `producedAt` (RFC 6960 4.2.2.2), or null. */
function delegatedResponderProblem(responder: pkijs.Certificate, issuer: pkijs.Certificate, producedAt: Date, at: Date): string | null {
  if (!nameDer(responder.issuer).equals(nameDer(issuer.subject))) return 'its certificate was issued by another name';
  if (!sameAlgorithm(responder.signature, responder.signatureAlgorithm)) return 'its certificate names two signature algorithms';
  const issued = checkSignature(
    { what: RESPONDER, algorithm: responder.signatureAlgorithm, signer: issuer },
    responder.tbsView,
    responder.signatureValue,
    at,
  );
  if (typeof issued === 'string') return `its certificate is not signed by the issuer (${issued})`;
  if (issued !== true) return `its certificate does not meet the cryptographic floor (${issued.floor})`;
  const eku = extensionValue(responder, OID.extKeyUsage);
  if (
    !eku ||
    !(eku instanceof asn1js.Sequence) ||
    !eku.valueBlock.value.some((o) => o instanceof asn1js.ObjectIdentifier && o.getValue() === OID.ocspSigning)
  )
    return 'its certificate is not for OCSP signing (id-kp-OCSPSigning)';
  if (!keyUsageAllows(responder, KEY_USAGE_DIGITAL_SIGNATURE)) return 'its certificate’s key usage excludes digital signatures';
  const from = responder.notBefore.value;
  const to = responder.notAfter.value;
  if (!validDate(producedAt) || !(from.getTime() <= producedAt.getTime() && producedAt.getTime() <= to.getTime()))
    return 'its certificate was not valid when the response was produced';
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// CRLs (RFC 5280)

/** CRL extensions understood; any other critical one makes the CRL unusable. */
const CRL_EXTENSIONS_UNDERSTOOD = new Set<string>([OID.crlNumber, OID.authorityKeyId, OID.issuingDistributionPoint]);

async function fromCrl(
  der: Buffer,
  cert: pkijs.Certificate,
  issuer: pkijs.Certificate,
  identity: Identity,
  poe: Date,
  at: Date,
): Promise<Finding | string> {
  if (der.length > MAX_REVOCATION_BYTES) return `is larger than ${MAX_REVOCATION_BYTES} bytes and was not read`;
  const crl = parsedOnce('crl', der, () => parseWhole(der, (schema) => new pkijs.CertificateRevocationList({ schema })));
  if (!crl) return 'is not a readable CertificateList';
  if (crl.version !== 1) return 'is not a version 2 CRL';
  if (!nameDer(crl.issuer).equals(nameDer(issuer.subject))) return "is issued by another name than the certificate's issuer";
  if (!sameAlgorithm(crl.signature, crl.signatureAlgorithm)) return 'names two signature algorithms';
  if (!keyUsageAllows(issuer, KEY_USAGE_CRL_SIGN)) return 'was signed by an issuer whose key usage excludes CRL signing';

  const extensions = crl.crlExtensions?.extensions ?? [];
  if (extensions.some((e) => e.extnID === OID.deltaCrlIndicator)) return 'is a delta CRL, which is not used';
  const critical = extensions.find((e) => e.critical && !CRL_EXTENSIONS_UNDERSTOOD.has(e.extnID));
  if (critical) return `has a critical extension that is not understood (${critical.extnID})`;

  const judged = { what: CRL_SIGNATURE, algorithm: crl.signatureAlgorithm, signer: issuer };
  const key = memoKey('crl', der, issuer);
  if (key === undefined || !SIGNED.has(key)) {
    const checked = checkSignature(judged, crl.tbsView, crl.signatureValue, at);
    if (typeof checked === 'string') return `is not signed by the certificate's issuer: ${checked}`;
    if (checked !== true) return weak(checked);
    remember(key, -1, () => undefined);
  }
  // The floor is judged at the time of checking, every time (a remembered signature included).
  const floor = floorProblem(judged, at);
  if (floor) return weak({ floor });

  const thisUpdate = crl.thisUpdate.value;
  const nextUpdate = crl.nextUpdate?.value;
  if (!validDate(thisUpdate) || (nextUpdate !== undefined && !validDate(nextUpdate))) return 'has a date that cannot be read';
  if (thisUpdate.getTime() > at.getTime()) return `was issued (thisUpdate ${iso(thisUpdate)}) after the time of checking`;
  if (nextUpdate && nextUpdate.getTime() < thisUpdate.getTime()) return 'has a nextUpdate before its thisUpdate';

  const idp = extensions.find((e) => e.extnID === OID.issuingDistributionPoint);
  if (idp) {
    const scope = distributionPointProblem(idp, cert);
    if (scope) return scope;
  }

  let entry: { revokedAt: Date; reasonCode: number | undefined } | undefined;
  for (const revoked of crl.revokedCertificates ?? []) {
    let reasonCode: number | undefined;
    for (const ext of revoked.crlEntryExtensions?.extensions ?? []) {
      if (ext.extnID === OID.certificateIssuer) return 'names certificates of another issuer (an indirect CRL), which is not used';
      if (ext.extnID === OID.reasonCode) {
        const value = asn1js.fromBER(ext.extnValue.valueBlock.valueHexView).result;
        if (!(value instanceof asn1js.Enumerated)) return 'has a reason code that cannot be read';
        reasonCode = value.valueBlock.valueDec;
      } else if (ext.critical && ext.extnID !== OID.invalidityDate) {
        return `has a critical entry extension that is not understood (${ext.extnID})`;
      }
    }
    if (reasonCode === REMOVE_FROM_CRL) return 'has a removeFromCRL entry, which only a delta CRL may hold';
    if (!entry && integerKey(revoked.userCertificate) === identity.serial) {
      const revokedAt = revoked.revocationDate.value;
      if (!validDate(revokedAt)) return 'has a revocationDate that cannot be read';
      entry = { revokedAt, reasonCode };
    }
  }

  const fresh = thisUpdate.getTime() >= poe.getTime() - FRESH_SKEW_MS;
  const source = `CRL thisUpdate ${iso(thisUpdate)}${nextUpdate ? `, nextUpdate ${iso(nextUpdate)}` : ''}, signed by the issuer`;
  if (!entry) return fresh ? { status: 'good', thisUpdate, source } : stale(thisUpdate, poe);
  const usable = usableRevocation(entry.revokedAt, entry.reasonCode, thisUpdate, fresh, poe);
  if (typeof usable === 'string') return usable;
  return { status: 'revoked', thisUpdate, revokedAt: entry.revokedAt, ...reasonOf(entry.reasonCode), source };
}

/**
 * Whether a CRL with this IssuingDistributionPoint covers `cert` completely: not indirect, not for some reasons
 * only, not for attribute certificates, for `cert`'s kind (CA or not), and, when it names its distribution point,
 * one `cert` names too (a partition of the issuer's CRL). Null when it does; else why not.
 */
function distributionPointProblem(idp: pkijs.Extension, cert: pkijs.Certificate): string | null {
  const value = asn1js.fromBER(idp.extnValue.valueBlock.valueHexView).result;
  if (!(value instanceof asn1js.Sequence)) return 'has an issuing distribution point that cannot be read';
  let names: Set<string> | undefined;
  for (const field of value.valueBlock.value) {
    if (field.idBlock.tagClass !== 3) return 'has an issuing distribution point that cannot be read';
    const tag = field.idBlock.tagNumber;
    if (tag >= 1 && tag <= 5 && field.idBlock.isConstructed) return 'has an issuing distribution point that cannot be read';
    const on = () => {
      const bytes = (field as asn1js.Primitive).valueBlock.valueHexView;
      return bytes !== undefined && bytes.length === 1 && bytes[0] !== 0;
    };
    switch (tag) {
      case 0: {
        names = fullNames(field);
        if (!names) return 'names its distribution point relative to its issuer, which is not used';
        break;
      }
      case 1:
        if (on() && isCa(cert)) return 'covers end-entity certificates only';
        break;
      case 2:
        if (on() && !isCa(cert)) return 'covers CA certificates only';
        break;
      case 3:
        return 'covers some revocation reasons only, which is not used';
      case 4:
        if (on()) return 'is an indirect CRL, which is not used';
        break;
      case 5:
        if (on()) return 'covers attribute certificates only';
        break;
      default:
        return 'has an issuing distribution point that cannot be read';
    }
  }
  if (names) {
    const points = extensionValue(cert, OID.crlDistributionPoints);
    const named = new Set<string>();
    if (points instanceof asn1js.Sequence) {
      for (const point of points.valueBlock.value) {
        const dp =
          point instanceof asn1js.Sequence
            ? point.valueBlock.value.find((f) => f.idBlock.tagClass === 3 && f.idBlock.tagNumber === 0)
            : undefined;
        for (const n of (dp && fullNames(dp)) ?? []) named.add(n);
      }
    }
    if (![...names].some((n) => named.has(n))) return 'is for a distribution point the certificate does not name';
  }
  return null;
}

/** The GeneralNames (DER, hex) of a distributionPoint [0] { fullName [0] { GeneralName… } }; undefined for another form. */
function fullNames(field: asn1js.BaseBlock): Set<string> | undefined {
  const choice = (field as asn1js.Constructed).valueBlock?.value?.[0];
  if (!choice || choice.idBlock.tagClass !== 3 || choice.idBlock.tagNumber !== 0 || !choice.idBlock.isConstructed) return undefined;
  return new Set((choice as asn1js.Constructed).valueBlock.value.map((n) => Buffer.from(n.toBER(false)).toString('hex')));
}

// ---------------------------------------------------------------------------------------------------------------
// Shared rules

/**
 * Whether a revocation the data states can be used: from fresh data always; from data issued before the signature
 * existed only when it is final (not a certificateHold, which can be lifted) and at or before the data's thisUpdate.
 */
function usableRevocation(revokedAt: Date, reasonCode: number | undefined, thisUpdate: Date, fresh: boolean, poe: Date): true | string {
  if (reasonCode === REMOVE_FROM_CRL) return 'states a removeFromCRL revocation, which is not used';
  if (fresh) return true;
  if (reasonCode === CERTIFICATE_HOLD) return `${stale(thisUpdate, poe)}, and its certificateHold may have been lifted since`;
  if (revokedAt.getTime() > thisUpdate.getTime()) return `${stale(thisUpdate, poe)}, and states a revocation after it`;
  return true;
}

function reasonOf(code: number | undefined): { reason?: string } {
  if (code === undefined) return {};
  return { reason: REASONS[code] ?? `reason code ${code}` };
}

function stale(thisUpdate: Date, poe: Date): string {
  return `is stale: issued (thisUpdate ${iso(thisUpdate)}) before the signature existed (${iso(poe)})`;
}

/**
 * The project's cryptographic floor (src/evidence/certificate-policy.ts, ETSI TS 119 312 as dated there), judged
 * at `at`: the first problem, or undefined.
 */
function floorProblem(judged: Judged, at: Date): string | undefined {
  return algorithmProblems(
    judged.what,
    {
      signatureAlgorithmOid: judged.algorithm.algorithmId,
      signatureParams: judged.algorithm.algorithmParams,
      publicKey: judged.signer.subjectPublicKeyInfo,
    },
    at,
  )[0];
}

const weak = (failed: { floor: string }) => `does not meet the cryptographic floor: ${failed.floor}`;

/**
 * Whether `signature` over `data` is `judged.signer`'s: first the project's floor at `at` (`{ floor }` when it is
 * not met), then a verification that knows only what revocation data may use whatever the date (the brief's floor,
 * absolute): RSA (PKCS#1 v1.5 or PSS) of 2048 bits or more, or ECDSA on P-256, P-384 or P-521, with SHA-256,
 * SHA-384 or SHA-512; nothing SHA-1-based. True, or why not.
 */
function checkSignature(judged: Judged, data: Uint8Array, signature: asn1js.BitString, at: Date): true | { floor: string } | string {
  const floor = floorProblem(judged, at);
  if (floor) return { floor };
  const { signer, algorithm } = judged;
  const key = publicKey(signer);
  if (typeof key === 'string') return key;
  const oid = algorithm.algorithmId;
  if (WEAK.has(oid)) return `its signature algorithm uses SHA-1 or an older hash (${oid})`;
  const details = key.asymmetricKeyDetails ?? {};
  let hash: string | undefined;
  let options: Parameters<typeof verifySignature>[2] = key;
  const rsaFloor = () =>
    (details.modulusLength ?? 0) < 2048 ? `its signer's RSA key has ${details.modulusLength ?? 0} bits, fewer than 2048` : null;
  if (RSA_PKCS1[oid]) {
    if (key.asymmetricKeyType !== 'rsa') return "its signature algorithm does not match its signer's key";
    const weak = rsaFloor();
    if (weak) return weak;
    hash = RSA_PKCS1[oid];
  } else if (ECDSA[oid]) {
    if (key.asymmetricKeyType !== 'ec') return "its signature algorithm does not match its signer's key";
    if (!['prime256v1', 'secp384r1', 'secp521r1'].includes(details.namedCurve ?? ''))
      return `its signer's curve is not accepted (${details.namedCurve ?? 'unnamed'})`;
    hash = ECDSA[oid];
    options = { key, dsaEncoding: 'der' };
  } else if (oid === RSA_PSS) {
    if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss')
      return "its signature algorithm does not match its signer's key";
    const weak = rsaFloor();
    if (weak) return weak;
    const pss = pssParameters(algorithm);
    if (typeof pss === 'string') return pss;
    hash = pss.hash;
    options = { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: pss.saltLength };
  } else {
    return `its signature algorithm is not accepted (${oid})`;
  }
  if (signature.valueBlock.unusedBits !== 0) return 'its signature value cannot be read';
  try {
    return verifySignature(hash, data, options, signature.valueBlock.valueHexView) ? true : 'its signature does not verify';
  } catch {
    return 'its signature does not verify';
  }
}

const WEAK = new Set([
  '1.2.840.113549.1.1.5', // sha1WithRSAEncryption
  '1.2.840.10045.4.1', // ecdsa-with-SHA1
  '1.2.840.10040.4.3', // dsa-with-sha1
  '1.2.840.113549.1.1.4', // md5WithRSAEncryption
  '1.2.840.113549.1.1.2', // md2WithRSAEncryption
  '1.3.14.3.2.29', // sha1WithRSASignature (OIW)
]);
const RSA_PKCS1: Record<string, string> = {
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
};
const ECDSA: Record<string, string> = {
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
};
const RSA_PSS = '1.2.840.113549.1.1.10';
const HASHES: Record<string, string> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const MGF1 = '1.2.840.113549.1.1.8';

/** RSASSA-PSS parameters: a SHA-2 hash, MGF1 with the same hash, the usual trailer. */
function pssParameters(algorithm: pkijs.AlgorithmIdentifier): { hash: string; saltLength: number } | string {
  if (!algorithm.algorithmParams) return 'its RSASSA-PSS signature uses SHA-1';
  try {
    const params = new pkijs.RSASSAPSSParams({ schema: algorithm.algorithmParams });
    const hash = HASHES[params.hashAlgorithm.algorithmId];
    if (!hash) return 'its RSASSA-PSS signature uses SHA-1 or a hash that is not accepted';
    const mgf = params.maskGenAlgorithm;
    const mgfHash = mgf.algorithmParams ? new pkijs.AlgorithmIdentifier({ schema: mgf.algorithmParams }).algorithmId : OID.sha1;
    if (mgf.algorithmId !== MGF1 || HASHES[mgfHash] !== hash) return 'its RSASSA-PSS mask generation is not accepted';
    if (params.trailerField !== 1) return 'its RSASSA-PSS trailer is not accepted';
    return { hash, saltLength: params.saltLength };
  } catch {
    return 'its RSASSA-PSS parameters cannot be read';
  }
}

const KEYS = new WeakMap<pkijs.Certificate, KeyObject | string>();

function publicKey(cert: pkijs.Certificate): KeyObject | string {
  let key = KEYS.get(cert);
  if (key === undefined) {
    try {
      key = createPublicKey({ key: encodedOnce(cert.subjectPublicKeyInfo), format: 'der', type: 'spki' });
    } catch {
      key = "its signer's public key cannot be read";
    }
    KEYS.set(cert, key);
  }
  return key;
}

function certIdentity(cert: pkijs.Certificate, issuer: pkijs.Certificate): Identity {
  const name = nameDer(issuer.subject);
  const key = issuer.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView;
  const hashes = { [OID.sha1]: 'sha1', [OID.sha256]: 'sha256' };
  const names = new Map<string, Buffer>();
  const keys = new Map<string, Buffer>();
  for (const [oid, h] of Object.entries(hashes)) {
    names.set(oid, createHash(h).update(name).digest());
    keys.set(oid, createHash(h).update(key).digest());
  }
  return { names, keys, serial: integerKey(cert.serialNumber) };
}

/** An INTEGER's value, hex, without the redundant leading bytes a non-minimal encoding may carry. */
function integerKey(value: asn1js.Integer): string {
  let bytes = Buffer.from(value.valueBlock.valueHexView);
  while (bytes.length > 1 && ((bytes[0] === 0x00 && bytes[1]! < 0x80) || (bytes[0] === 0xff && bytes[1]! >= 0x80)))
    bytes = bytes.subarray(1);
  return bytes.toString('hex');
}

function nameDer(name: pkijs.RelativeDistinguishedNames): Buffer {
  return encodedOnce(name);
}

function keySha1(cert: pkijs.Certificate): Buffer {
  return createHash('sha1').update(cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest();
}

function sameAlgorithm(a: pkijs.AlgorithmIdentifier, b: pkijs.AlgorithmIdentifier): boolean {
  return encodedOnce(a).equals(encodedOnce(b));
}

/** An extension's value, parsed (undefined when absent or unreadable). */
function extensionValue(cert: pkijs.Certificate, oid: string): asn1js.AsnType | undefined {
  const ext = cert.extensions?.find((e) => e.extnID === oid);
  if (!ext) return undefined;
  const parsed = asn1js.fromBER(ext.extnValue.valueBlock.valueHexView);
  return parsed.offset === -1 ? undefined : parsed.result;
}

/** Whether `cert`'s key usage, when it has one, includes bit `bit`. An unreadable key usage allows nothing. */
function keyUsageAllows(cert: pkijs.Certificate, bit: number): boolean {
  if (!cert.extensions?.some((e) => e.extnID === OID.keyUsage)) return true;
  const value = extensionValue(cert, OID.keyUsage);
  if (!(value instanceof asn1js.BitString)) return false;
  const bytes = value.valueBlock.valueHexView;
  return ((bytes[bit >> 3] ?? 0) & (0x80 >> (bit & 7))) !== 0;
}

function isCa(cert: pkijs.Certificate): boolean {
  const value = extensionValue(cert, OID.basicConstraints);
  const first = value instanceof asn1js.Sequence ? value.valueBlock.value[0] : undefined;
  return first instanceof asn1js.Boolean && first.getValue();
}

/** A structure read from DER that must span all of `der` (no trailing bytes); undefined when it cannot be read. */
function parseWhole<T>(der: Uint8Array, make: (schema: asn1js.AsnType) => T): T | undefined {
  try {
    if (der.length === 0) return undefined;
    const parsed = asn1js.fromBER(der);
    if (parsed.offset !== der.length || parsed.result.error) return undefined;
    return make(parsed.result);
  } catch {
    return undefined;
  }
}

const validDate = (d: Date | undefined): d is Date => d instanceof Date && Number.isFinite(d.getTime());
const iso = (d: Date) => (validDate(d) ? d.toISOString() : 'an unreadable date');
const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 200);

// ---------------------------------------------------------------------------------------------------------------
// Memo of signatures that verified

/**
 * Responses and CRLs found signed for an issuer, by the SHA-256 of their DER and of the issuer's certificate (its
 * signed part as read, its signature algorithm and value): which certificate signed (-1: the issuer; else the index
 * of the delegated responder among the response's certificates). Nothing else is remembered: the CertID, the scope,
 * every date and the (dated) cryptographic floor are judged at each call. Only verdicts that held are kept; bounded,
 * the oldest out first.
 */
const SIGNED = new Map<string, number>();
const SIGNED_MAX = 1_000;
const ISSUER_ID = new WeakMap<pkijs.Certificate, string>();

function tbsId(cert: pkijs.Certificate): string | undefined {
  let id = ISSUER_ID.get(cert);
  if (id === undefined) {
    if (!cert.tbsView.byteLength) return undefined;
    id = createHash('sha256')
      .update(cert.tbsView)
      .update(Buffer.from(cert.signatureAlgorithm.toSchema().toBER(false)))
      .update(Buffer.from(cert.signatureValue.toBER(false)))
      .digest('hex');
    ISSUER_ID.set(cert, id);
  }
  return id;
}

function memoKey(kind: 'ocsp' | 'crl', der: Buffer, issuer: pkijs.Certificate): string | undefined {
  const id = tbsId(issuer);
  return id === undefined ? undefined : `${kind}:${createHash('sha256').update(der).digest('hex')}:${id}`;
}

function remember<T>(key: string | undefined, signer: number, answer: (signer: number) => T): T {
  if (key !== undefined) {
    SIGNED.set(key, signer);
    if (SIGNED.size > SIGNED_MAX) SIGNED.delete(SIGNED.keys().next().value!);
  }
  return answer(signer);
}
