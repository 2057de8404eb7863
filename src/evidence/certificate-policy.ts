import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { encodedOnce } from './der-memo.js';
import { certificateDer, EKU_TIME_STAMPING, EXT, formatName, OID, summarize } from './pki.js';

/**
 * What a certificate must be to vouch for a seal or a time-stamp, checked by hand: RFC 5280 path validation
 * (simplified to what our chains need), the key purposes of a seal's and a time-stamping authority's certificate,
 * the cryptographic floor (ETSI TS 119 312, as the EU DSS default policy applies it) and the ESS binding of the
 * signer's certificate into what it signed (RFC 5035). pkijs's own chain check (`SignedData.verify` with
 * `checkChain`, its CertificateChainValidationEngine) checks none of the leaf's purposes or extensions, no
 * pathLenConstraint, no algorithm, accepts any critical extension that parses as BER, tries only the shortest path it
 * builds, and never returns on a pool of cross-signed CAs: verify the signature with `checkChain: false` and validate
 * the path here.
 *
 * Every function answers with the problems it found, in words an auditor can read; none throws on hostile input.
 */

/**
 * The extensions this module understands when critical (RFC 5280 4.2: a certificate with a critical extension the
 * validator does not recognise MUST be refused). extKeyUsage is judged by the role checks below, which a caller runs
 * on the leaf. Deliberately not here: nameConstraints, policyConstraints, policyMappings, inhibitAnyPolicy and a
 * critical certificatePolicies. Their processing (RFC 5280 6.1.3-6.1.4) is not implemented, and accepting them
 * unprocessed would accept paths their CA forbade; ETSI EN 319 412-2 has certificatePolicies non-critical anyway.
 */
const UNDERSTOOD_CRITICAL = new Set<string>(Object.values(EXT));

/** A chain longer than this is refused: real PKIs have three or four certificates; this bounds the search. */
const MAX_CHAIN = 8;
/** Candidate issuers examined per path search, whatever the pool holds: a hostile signature cannot make it spin. */
const MAX_CANDIDATES = 64;

const KEY_USAGE_BITS = [
  'digitalSignature',
  'nonRepudiation',
  'keyEncipherment',
  'dataEncipherment',
  'keyAgreement',
  'keyCertSign',
  'cRLSign',
  'encipherOnly',
  'decipherOnly',
] as const;
const DIGITAL_SIGNATURE = 0;
const NON_REPUDIATION = 1;
const KEY_CERT_SIGN = 5;

const EKU_NAMES: Record<string, string> = {
  '1.3.6.1.5.5.7.3.1': 'serverAuth',
  '1.3.6.1.5.5.7.3.2': 'clientAuth',
  '1.3.6.1.5.5.7.3.3': 'codeSigning',
  '1.3.6.1.5.5.7.3.4': 'emailProtection',
  '1.3.6.1.5.5.7.3.8': 'timeStamping',
  '1.3.6.1.5.5.7.3.9': 'OCSPSigning',
  '1.3.6.1.5.5.7.3.36': 'documentSigning',
  '1.2.840.113583.1.1.5': 'Adobe Authentic Documents',
  '1.3.6.1.4.1.311.10.3.12': 'Microsoft document signing',
  '2.5.29.37.0': 'anyExtendedKeyUsage',
};

/**
 * The purposes under which a key may seal a PDF. documentSigning is RFC 9336's; Adobe's is what the AATL and the
 * sandbox use; emailProtection and Microsoft's are what S/MIME and Office signing certificates carry, which PDF
 * validators (Adobe, DSS) accept for documents; anyExtendedKeyUsage (RFC 5280 4.2.1.12) allows every purpose.
 */
const SEAL_PURPOSES = new Set([
  '1.3.6.1.5.5.7.3.36',
  '1.2.840.113583.1.1.5',
  '1.3.6.1.5.5.7.3.4',
  '1.3.6.1.4.1.311.10.3.12',
  '2.5.29.37.0',
]);

// ---------------------------------------------------------------------------------------------------------------
// Reading extensions

/** DER that must be one whole ASN.1 value: trailing bytes are as suspect as a parse error. */
function parseDer(bytes: Uint8Array): asn1js.AsnType {
  const { offset, result } = asn1js.fromBER(bytes);
  if (offset === -1 || offset !== bytes.byteLength || result.error) throw new Error('not one DER value');
  return result;
}

function describe(cert: pkijs.Certificate): string {
  const name = formatName(cert.subject);
  return `"${name || '(empty subject)'}"`;
}

type Read<T> = { value: T } | { problem: string };

/** The extension `oid` of `cert`, if any; RFC 5280 4.2: "A certificate MUST NOT include more than one instance of a particular extension". */
function extensionOf(cert: pkijs.Certificate, oid: string): Read<pkijs.Extension | undefined> {
  const found = (cert.extensions ?? []).filter((e) => e.extnID === oid);
  if (found.length > 1) return { problem: `it carries the extension ${oid} ${found.length} times (RFC 5280 4.2 allows one)` };
  return { value: found[0] };
}

function extensionDer(ext: pkijs.Extension): Uint8Array {
  return ext.extnValue.valueBlock.valueHexView;
}

/** basicConstraints (RFC 5280 4.2.1.9): cA (DEFAULT FALSE) and pathLenConstraint; undefined when absent. */
function basicConstraintsOf(cert: pkijs.Certificate): Read<{ cA: boolean; pathLen: number | undefined } | undefined> {
  const ext = extensionOf(cert, EXT.basicConstraints);
  if ('problem' in ext || !ext.value) return ext as Read<undefined>;
  try {
    const seq = parseDer(extensionDer(ext.value));
    if (!(seq instanceof asn1js.Sequence)) throw new Error('not a SEQUENCE');
    const items = [...seq.valueBlock.value];
    let cA = false;
    let pathLen: number | undefined;
    if (items[0] instanceof asn1js.Boolean) cA = (items.shift() as asn1js.Boolean).getValue();
    if (items[0] instanceof asn1js.Integer) {
      const value = (items.shift() as asn1js.Integer).toBigInt();
      if (value < 0n) throw new Error('a negative pathLenConstraint');
      pathLen = value > BigInt(MAX_CHAIN) ? MAX_CHAIN : Number(value);
    }
    if (items.length) throw new Error('unexpected fields');
    return { value: { cA, pathLen } };
  } catch (err) {
    return { problem: `its basicConstraints extension is malformed (${(err as Error).message})` };
  }
}

/** The keyUsage bits set (RFC 5280 4.2.1.3); undefined when the extension is absent. */
function keyUsageOf(cert: pkijs.Certificate): Read<Set<number> | undefined> {
  const ext = extensionOf(cert, EXT.keyUsage);
  if ('problem' in ext || !ext.value) return ext as Read<undefined>;
  try {
    const bits = parseDer(extensionDer(ext.value));
    if (!(bits instanceof asn1js.BitString)) throw new Error('not a BIT STRING');
    const bytes = bits.valueBlock.valueHexView;
    const length = bytes.length * 8 - bits.valueBlock.unusedBits;
    const set = new Set<number>();
    for (let i = 0; i < Math.min(length, KEY_USAGE_BITS.length); i++) if (bytes[i >> 3]! & (0x80 >> (i & 7))) set.add(i);
    return { value: set };
  } catch (err) {
    return { problem: `its keyUsage extension is malformed (${(err as Error).message})` };
  }
}

/** extKeyUsage (RFC 5280 4.2.1.12): its purposes and whether it is critical; undefined when absent. */
function extendedKeyUsageOf(cert: pkijs.Certificate): Read<{ purposes: string[]; critical: boolean } | undefined> {
  const ext = extensionOf(cert, EXT.extKeyUsage);
  if ('problem' in ext || !ext.value) return ext as Read<undefined>;
  try {
    const seq = parseDer(extensionDer(ext.value));
    if (!(seq instanceof asn1js.Sequence) || seq.valueBlock.value.length === 0) throw new Error('not a non-empty SEQUENCE');
    const purposes = seq.valueBlock.value.map((item) => {
      if (!(item instanceof asn1js.ObjectIdentifier)) throw new Error('a purpose that is not an OID');
      return item.valueBlock.toString();
    });
    return { value: { purposes, critical: ext.value.critical } };
  } catch (err) {
    return { problem: `its extendedKeyUsage extension is malformed (${(err as Error).message})` };
  }
}

const usageNames = (bits: Set<number>) => [...bits].map((b) => KEY_USAGE_BITS[b]).join(', ') || 'none';
const purposeNames = (purposes: string[]) => purposes.map((p) => EKU_NAMES[p] ?? p).join(', ');

// ---------------------------------------------------------------------------------------------------------------
// Path validation (RFC 5280 6.1)

function sameCertificate(a: pkijs.Certificate, b: pkijs.Certificate): boolean {
  return (
    a === b ||
    (Buffer.from(a.tbsView).equals(Buffer.from(b.tbsView)) &&
      Buffer.from(a.signatureValue.valueBlock.valueHexView).equals(Buffer.from(b.signatureValue.valueBlock.valueHexView)))
  );
}

/** Self-issued (RFC 5280 3.2): subject and issuer are the same name, whatever key signed it (a key rollover). */
function selfIssued(cert: pkijs.Certificate): boolean {
  return cert.subject.isEqual(cert.issuer);
}

/** What is wrong with any certificate of a path, leaf or CA: its dates at `at`, its extensions, its algorithm fields. */
function certificateProblem(cert: pkijs.Certificate, at: Date): string | undefined {
  // RFC 5280 6.1.3 (a)(2): the certificate validity period includes the time the path is judged at.
  const from = cert.notBefore.value;
  const until = cert.notAfter.value;
  if (!(from.getTime() <= at.getTime() && at.getTime() <= until.getTime())) {
    return `it is valid from ${from.toISOString()} to ${until.toISOString()}, not at ${at.toISOString()}`;
  }
  // RFC 5280 4.1.1.2: signatureAlgorithm "MUST contain the same algorithm identifier as the signature field" in the
  // signed part. Only the signed one is protected: a validator reading the other could be told a different algorithm.
  const inner = encodedOnce(cert.signature);
  const outer = encodedOnce(cert.signatureAlgorithm);
  if (!inner.equals(outer)) return 'its signed and unsigned signature algorithm fields differ (RFC 5280 4.1.1.2)';
  const seen = new Set<string>();
  for (const ext of cert.extensions ?? []) {
    if (seen.has(ext.extnID)) return `it carries the extension ${ext.extnID} more than once (RFC 5280 4.2 allows one)`;
    seen.add(ext.extnID);
    // RFC 5280 4.2: "A certificate-using system MUST reject the certificate if it encounters a critical extension it
    // does not recognize". pkijs refuses only one it cannot parse as BER, which any well-formed unknown one is not.
    if (ext.critical && !UNDERSTOOD_CRITICAL.has(ext.extnID))
      return `it carries a critical extension this validator does not process (${ext.extnID})`;
  }
  return undefined;
}

/**
 * What keeps `issuer` from issuing the last certificate of `below` (the path so far, leaf first), apart from the
 * signature: it must be a CA allowed to sign certificates, and deep enough for the path under it.
 */
function issuerProblem(issuer: pkijs.Certificate, below: readonly pkijs.Certificate[], at: Date): string | undefined {
  const general = certificateProblem(issuer, at);
  if (general) return general;
  // RFC 5280 6.1.4 (k): the basicConstraints extension is present and cA is TRUE (a v1 or end-entity certificate
  // cannot issue, however its name chains: the "leaf as CA" attack).
  const bc = basicConstraintsOf(issuer);
  if ('problem' in bc) return bc.problem;
  if (!bc.value) return 'it is not a CA certificate (no basicConstraints extension)';
  if (!bc.value.cA) return 'it is not a CA certificate (basicConstraints cA is not TRUE)';
  // RFC 5280 6.1.4 (n): when keyUsage is present, keyCertSign must be set.
  const ku = keyUsageOf(issuer);
  if ('problem' in ku) return ku.problem;
  if (ku.value && !ku.value.has(KEY_CERT_SIGN)) return `its keyUsage (${usageNames(ku.value)}) does not include keyCertSign`;
  // RFC 5280 6.1.4 (l)-(m): pathLenConstraint bounds the non-self-issued intermediate certificates that may follow
  // it (the leaf is not counted). Honoured for the trust anchor too, as OpenSSL does: a root that says "no
  // intermediates" means it.
  if (bc.value.pathLen !== undefined) {
    const intermediates = below.slice(1).filter((c) => !selfIssued(c)).length;
    if (intermediates > bc.value.pathLen) {
      return `its pathLenConstraint ${bc.value.pathLen} allows ${bc.value.pathLen} intermediate certificate(s) below it, and the path has ${intermediates}`;
    }
  }
  return undefined;
}

/** RFC 5280 4.2.1.1: when both key identifiers are there and differ, this issuer's key did not sign it (a shortcut, not a check). */
function keyIdsDisagree(child: pkijs.Certificate, issuer: pkijs.Certificate): boolean {
  const aki = child.extensions?.find((e) => e.extnID === EXT.authorityKeyId)?.parsedValue as pkijs.AuthorityKeyIdentifier | undefined;
  const ski = issuer.extensions?.find((e) => e.extnID === EXT.subjectKeyId)?.parsedValue as asn1js.OctetString | undefined;
  const a = aki instanceof pkijs.AuthorityKeyIdentifier ? aki.keyIdentifier?.valueBlock.valueHexView : undefined;
  const s = ski instanceof asn1js.OctetString ? ski.valueBlock.valueHexView : undefined;
  return !!a && !!s && !Buffer.from(a).equals(Buffer.from(s));
}

/**
 * Whether `issuer`'s key verifies `child`'s signature: the same bytes and the same key give the same answer, so it is
 * remembered per pair of certificate objects (the remembered certificates are the same objects in every check, and
 * each verification imported the key again). Dates, names and extensions are still judged at each use.
 */
const SIGNED_BY = new WeakMap<pkijs.Certificate, WeakMap<pkijs.Certificate, Promise<boolean>>>();

function signedBy(child: pkijs.Certificate, issuer: pkijs.Certificate): Promise<boolean> {
  let byIssuer = SIGNED_BY.get(child);
  if (!byIssuer) SIGNED_BY.set(child, (byIssuer = new WeakMap()));
  let verdict = byIssuer.get(issuer);
  if (!verdict) byIssuer.set(issuer, (verdict = child.verify(issuer).catch(() => false)));
  return verdict;
}

/**
 * Builds and validates the path leaf → … → one of `anchors` (RFC 5280 6.1, simplified for our use): issuer/subject
 * name chaining with signature verification at each step, every non-leaf certificate with basicConstraints cA=TRUE
 * (extension present), keyUsage keyCertSign when keyUsage is present, pathLenConstraint honoured, validity of each
 * certificate (anchor included) at `at`, unknown critical extensions refused, no loops, at most 8 certificates.
 * `pool`: certificates the signature carries (untrusted). Returns the chain (leaf first, anchor last) or why not.
 *
 * Paths are searched depth first, anchors before the pool at each step, so a failing candidate (an expired
 * intermediate beside its renewal) does not hide a valid path. A leaf that is itself one of the anchors is a chain
 * of one. What this does not do: revocation (the /DSS's OCSP responses and CRLs are judged elsewhere), policy
 * processing and name constraints (refused when critical, above), and the leaf's purpose (the role checks below).
 */
export async function validatePath(
  leaf: pkijs.Certificate,
  pool: readonly pkijs.Certificate[],
  anchors: readonly pkijs.Certificate[],
  at: Date,
): Promise<{ chain: pkijs.Certificate[] } | { problem: string }> {
  try {
    const leafProblem = certificateProblem(leaf, at);
    if (leafProblem) return { problem: `the certificate ${describe(leaf)}: ${leafProblem}` };
    if (anchors.some((a) => sameCertificate(a, leaf))) return { chain: [leaf] };
    if (!anchors.length) return { problem: 'no trust anchor is configured' };

    const candidates = [
      ...anchors.map((cert) => ({ cert, anchor: true })),
      ...pool.filter((c) => !anchors.some((a) => sameCertificate(a, c))).map((cert) => ({ cert, anchor: false })),
    ];
    // The most telling reason a path failed: the one found deepest (the leaf's issuer being expired says more than
    // "no issuer"), the first at that depth.
    let why = { depth: 0, problem: `no certificate the signature carries, nor any trust anchor, issued ${describe(leaf)}` };
    const note = (depth: number, problem: string) => {
      if (depth > why.depth) why = { depth, problem };
    };
    let examined = 0;

    const search = async (path: pkijs.Certificate[]): Promise<pkijs.Certificate[] | undefined> => {
      const child = path[path.length - 1]!;
      // RFC 5280 6.1.3 (a)(4): the issuer name of each certificate is the subject name of the next. A certificate
      // already in the path is never taken again: no loops (cross-signed CAs would otherwise lead round and round).
      const issuers = candidates.filter(
        ({ cert }) => cert.subject.isEqual(child.issuer) && !path.some((p) => sameCertificate(p, cert)) && !keyIdsDisagree(child, cert),
      );
      if (!issuers.length && path.length > 1) {
        note(
          path.length,
          `the path ends at ${describe(child)}: no other certificate the signature carries, nor any trust anchor, issued it`,
        );
      }
      for (const { cert, anchor } of issuers) {
        if (++examined > MAX_CANDIDATES) {
          note(Number.MAX_SAFE_INTEGER, `the certificates the signature carries offer more than ${MAX_CANDIDATES} candidate issuers`);
          return undefined;
        }
        const depth = path.length;
        if (path.length + 1 > MAX_CHAIN) {
          note(depth, `no path to a trust anchor within ${MAX_CHAIN} certificates`);
          continue;
        }
        const problem = issuerProblem(cert, path, at);
        if (problem) {
          note(depth, `the ${anchor ? 'trust anchor' : 'certificate'} ${describe(cert)} cannot issue ${describe(child)}: ${problem}`);
          continue;
        }
        // RFC 5280 6.1.3 (a)(1): the signature verifies with the issuer's public key.
        if (!(await signedBy(child, cert))) {
          note(depth, `the certificate ${describe(child)} is not signed by the key of ${describe(cert)}`);
          continue;
        }
        if (anchor) return [...path, cert];
        const found = await search([...path, cert]);
        if (found) return found;
      }
      return undefined;
    };

    const chain = await search([leaf]);
    return chain ? { chain } : { problem: why.problem };
  } catch (err) {
    return { problem: `the certificate path could not be read: ${(err as Error).message}` };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// What a certificate is for

/** A CA's key signs certificates (RFC 5280 4.2.1.9); it must not speak as a seal or a time-stamping authority too. */
function caProblem(cert: pkijs.Certificate): string | undefined {
  const bc = basicConstraintsOf(cert);
  if ('problem' in bc) return bc.problem;
  return bc.value?.cA ? 'it is a CA certificate (basicConstraints cA=TRUE): a CA key signs certificates, not documents' : undefined;
}

/**
 * Why `cert` cannot make a PAdES seal: keyUsage must be present with digitalSignature or nonRepudiation; EKU, when
 * present, must include one of documentSigning 1.3.6.1.5.5.7.3.36, Adobe Authentic Documents 1.2.840.113583.1.1.5,
 * emailProtection 1.3.6.1.5.5.7.3.4, MS document signing 1.3.6.1.4.1.311.10.3.12, anyExtendedKeyUsage 2.5.29.37.0 —
 * so serverAuth/clientAuth-only and timeStamping-only certificates are refused; a CA certificate (cA=TRUE) is refused.
 */
export function sealCertificateProblems(cert: pkijs.Certificate): string[] {
  const problems: string[] = [];
  try {
    // ETSI EN 319 412-2 4.3.2 (and -3 for seals, by reference) makes keyUsage mandatory; RFC 5280 4.2.1.3: a key
    // that signs anything but certificates and CRLs needs digitalSignature or nonRepudiation (contentCommitment).
    // A TLS server's key (keyEncipherment) is refused here.
    const ku = keyUsageOf(cert);
    if ('problem' in ku) problems.push(ku.problem);
    else if (!ku.value) problems.push('it has no keyUsage extension: a seal needs one with digitalSignature or nonRepudiation');
    else if (!ku.value.has(DIGITAL_SIGNATURE) && !ku.value.has(NON_REPUDIATION)) {
      problems.push(`its keyUsage (${usageNames(ku.value)}) has neither digitalSignature nor nonRepudiation`);
    }
    // RFC 5280 4.2.1.12: when extKeyUsage is present, the key is for those purposes only. A TLS certificate
    // (serverAuth, clientAuth) or a TSA's (timeStamping) under a trusted root must not seal documents.
    const eku = extendedKeyUsageOf(cert);
    if ('problem' in eku) problems.push(eku.problem);
    else if (eku.value && !eku.value.purposes.some((p) => SEAL_PURPOSES.has(p))) {
      problems.push(`its extendedKeyUsage (${purposeNames(eku.value.purposes)}) allows no document signing`);
    }
    const ca = caProblem(cert);
    if (ca) problems.push(ca);
  } catch (err) {
    problems.push(`its extensions cannot be read: ${(err as Error).message}`);
  }
  return problems;
}

/**
 * Why `cert` cannot issue RFC 3161 tokens: EKU present, critical, exactly timeStamping (RFC 3161 2.3); keyUsage if
 * present with digitalSignature or nonRepudiation; not a CA.
 */
export function timestampingCertificateProblems(cert: pkijs.Certificate): string[] {
  const problems: string[] = [];
  try {
    // RFC 3161 2.3: "The corresponding certificate MUST contain only one instance of the extended key usage field
    // extension ... with KeyPurposeID having value: id-kp-timeStamping. This extension MUST be critical."
    const eku = extendedKeyUsageOf(cert);
    if ('problem' in eku) problems.push(eku.problem);
    else if (!eku.value)
      problems.push('it has no extendedKeyUsage extension: a time-stamping authority needs timeStamping alone, critical (RFC 3161 2.3)');
    else {
      if (eku.value.purposes.length !== 1 || eku.value.purposes[0] !== EKU_TIME_STAMPING) {
        problems.push(`its extendedKeyUsage (${purposeNames(eku.value.purposes)}) is not timeStamping alone (RFC 3161 2.3)`);
      }
      if (!eku.value.critical) problems.push('its extendedKeyUsage extension is not critical (RFC 3161 2.3)');
    }
    // RFC 5280 4.2.1.3: a token is a signature, so the key must be for signing (ETSI EN 319 422 5.2.1 profiles it so).
    const ku = keyUsageOf(cert);
    if ('problem' in ku) problems.push(ku.problem);
    else if (ku.value && !ku.value.has(DIGITAL_SIGNATURE) && !ku.value.has(NON_REPUDIATION)) {
      problems.push(`its keyUsage (${usageNames(ku.value)}) has neither digitalSignature nor nonRepudiation`);
    }
    const ca = caProblem(cert);
    if (ca) problems.push(ca);
  } catch (err) {
    problems.push(`its extensions cannot be read: ${(err as Error).message}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// The cryptographic floor

/**
 * Digests, and the date from which a signature made with them is no longer acceptable. Modelled on the EU DSS
 * default policy (constraint.xml, AlgoExpirationDate) and ETSI TS 119 312, with one deliberate difference: SHA-1 is
 * accepted until 2016-01-01 (the CA/Browser Forum's and Microsoft's sunset), not 2009 as DSS has it, so that
 * time-stamped evidence from the SHA-1 era still verifies. Dates that TS 119 312 V1.4.2 only forecasts (SHA-256 and
 * up until 2029, which DSS downgrades to a warning and each revision has pushed back) are not enforced; revisit
 * when the standard is revised. SHA-224's 2026 date is already in force.
 */
const DIGESTS: Record<string, { name: string; until?: string }> = {
  '1.2.840.113549.2.2': { name: 'MD2', until: '2005-01-01' },
  '1.2.840.113549.2.5': { name: 'MD5', until: '2005-01-01' },
  '1.3.14.3.2.26': { name: 'SHA-1', until: '2016-01-01' },
  '1.3.36.3.2.1': { name: 'RIPEMD-160', until: '2011-01-01' },
  '2.16.840.1.101.3.4.2.4': { name: 'SHA-224', until: '2026-01-01' },
  '2.16.840.1.101.3.4.2.1': { name: 'SHA-256' },
  '2.16.840.1.101.3.4.2.2': { name: 'SHA-384' },
  '2.16.840.1.101.3.4.2.3': { name: 'SHA-512' },
  '2.16.840.1.101.3.4.2.8': { name: 'SHA3-256' },
  '2.16.840.1.101.3.4.2.9': { name: 'SHA3-384' },
  '2.16.840.1.101.3.4.2.10': { name: 'SHA3-512' },
};

const SHA1 = '1.3.14.3.2.26';
const RSASSA_PSS = '1.2.840.113549.1.1.10';

/**
 * Signature algorithms: the key they need and the digest they name (none: rsaEncryption, whose digest is the
 * SignerInfo's digestAlgorithm, RFC 3370 3.2; and RSASSA-PSS, whose digest is in its parameters, RFC 4055 3.1).
 * DSA and EdDSA are not listed, so refused: TS 119 312 retires DSA, and pkijs cannot verify EdDSA.
 */
const SIGNATURES: Record<string, { name: string; key: 'rsa' | 'ec'; digest?: string }> = {
  '1.2.840.113549.1.1.1': { name: 'RSA PKCS #1 v1.5', key: 'rsa' },
  '1.2.840.113549.1.1.2': { name: 'md2WithRSAEncryption', key: 'rsa', digest: '1.2.840.113549.2.2' },
  '1.2.840.113549.1.1.4': { name: 'md5WithRSAEncryption', key: 'rsa', digest: '1.2.840.113549.2.5' },
  '1.2.840.113549.1.1.5': { name: 'sha1WithRSAEncryption', key: 'rsa', digest: SHA1 },
  '1.2.840.113549.1.1.14': { name: 'sha224WithRSAEncryption', key: 'rsa', digest: '2.16.840.1.101.3.4.2.4' },
  '1.2.840.113549.1.1.11': { name: 'sha256WithRSAEncryption', key: 'rsa', digest: '2.16.840.1.101.3.4.2.1' },
  '1.2.840.113549.1.1.12': { name: 'sha384WithRSAEncryption', key: 'rsa', digest: '2.16.840.1.101.3.4.2.2' },
  '1.2.840.113549.1.1.13': { name: 'sha512WithRSAEncryption', key: 'rsa', digest: '2.16.840.1.101.3.4.2.3' },
  [RSASSA_PSS]: { name: 'RSASSA-PSS', key: 'rsa' },
  '1.2.840.10045.4.1': { name: 'ecdsa-with-SHA1', key: 'ec', digest: SHA1 },
  '1.2.840.10045.4.3.1': { name: 'ecdsa-with-SHA224', key: 'ec', digest: '2.16.840.1.101.3.4.2.4' },
  '1.2.840.10045.4.3.2': { name: 'ecdsa-with-SHA256', key: 'ec', digest: '2.16.840.1.101.3.4.2.1' },
  '1.2.840.10045.4.3.3': { name: 'ecdsa-with-SHA384', key: 'ec', digest: '2.16.840.1.101.3.4.2.2' },
  '1.2.840.10045.4.3.4': { name: 'ecdsa-with-SHA512', key: 'ec', digest: '2.16.840.1.101.3.4.2.3' },
};

/** RSA moduli: below 1024 bits never; below 2048 bits not from 2019-01-01 (DSS: 1024 until 2009, 1900 until 2026). */
const RSA_MIN_BITS = 1024;
const RSA_2048_FROM = '2019-01-01';
/** The NIST curves TS 119 312 lists and WebCrypto verifies (Node names them so). */
const CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

const refusedFrom = (until: string | undefined, at: Date) => until !== undefined && at.getTime() >= Date.parse(`${until}T00:00:00Z`);

function digestProblem(what: string, oid: string, at: Date): string | undefined {
  const digest = DIGESTS[oid];
  if (!digest) return `${what}: its digest algorithm ${oid} is not one this validator accepts`;
  if (refusedFrom(digest.until, at)) {
    return `${what}: ${digest.name} is not acceptable for a signature from ${digest.until} on (ETSI TS 119 312), and it is judged at ${at.toISOString()}`;
  }
  return undefined;
}

/** The key a structure read from bytes holds, read once per object (or why it cannot be read, thrown each time). */
const KEYS = new WeakMap<pkijs.PublicKeyInfo, KeyObject | Error>();

function keyOf(publicKey: pkijs.PublicKeyInfo): KeyObject {
  let key = KEYS.get(publicKey);
  if (key === undefined) {
    try {
      key = createPublicKey({ key: encodedOnce(publicKey), format: 'der', type: 'spki' });
    } catch (err) {
      key = err as Error;
    }
    KEYS.set(publicKey, key);
  }
  if (key instanceof Error) throw key;
  return key;
}

/** The key's type and strength: RSA modulus size by date, EC on the NIST curves only. */
function keyProblems(what: string, publicKey: pkijs.PublicKeyInfo, at: Date, expected?: 'rsa' | 'ec'): string[] {
  let key;
  try {
    key = keyOf(publicKey);
  } catch (err) {
    return [`${what}: its public key cannot be read (${(err as Error).message})`];
  }
  const type = key.asymmetricKeyType === 'rsa-pss' ? 'rsa' : key.asymmetricKeyType;
  if (expected && type !== expected)
    return [`${what}: the signature algorithm needs an ${expected.toUpperCase()} key, and the key is ${key.asymmetricKeyType}`];
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < RSA_MIN_BITS) return [`${what}: its RSA key has ${bits} bits, fewer than ${RSA_MIN_BITS}`];
    if (bits < 2048 && refusedFrom(RSA_2048_FROM, at)) {
      return [
        `${what}: its RSA key has ${bits} bits; from ${RSA_2048_FROM} on at least 2048 are needed, and it is judged at ${at.toISOString()}`,
      ];
    }
    return [];
  }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? 'an unnamed curve';
    return CURVES[curve] ? [] : [`${what}: its EC key is on ${curve}, not P-256, P-384 or P-521`];
  }
  return [`${what}: its ${key.asymmetricKeyType ?? 'unknown'} key is not RSA or EC`];
}

/** The digests RSASSA-PSS parameters name (RFC 4055 3.1): the message's and MGF1's, each SHA-1 when left out. */
function pssDigests(params: unknown): string[] {
  // RFC 4055 3.1: "The parameters MUST be present when used in the algorithm identifier associated with a signature value."
  if (!(params instanceof asn1js.BaseBlock) || params instanceof asn1js.Any) throw new Error('its parameters are missing');
  const schema = parseDer(new Uint8Array(params.toBER(false)));
  if (!(schema instanceof asn1js.Sequence)) throw new Error('its parameters are not a SEQUENCE');
  const pss = new pkijs.RSASSAPSSParams({ schema });
  if (pss.maskGenAlgorithm.algorithmId !== MGF1)
    throw new Error(`its mask generation function ${pss.maskGenAlgorithm.algorithmId} is not MGF1`);
  const mgfHash = new pkijs.AlgorithmIdentifier({ schema: pss.maskGenAlgorithm.algorithmParams });
  return [pss.hashAlgorithm.algorithmId, mgfHash.algorithmId];
}
const MGF1 = '1.2.840.113549.1.1.8';

/** A signature algorithm to judge: its OID (and parameters, for RSASSA-PSS), the separate digest if any, the signer's key. */
export interface SignatureAlgorithm {
  signatureAlgorithmOid: string;
  /** The AlgorithmIdentifier's parameters: only RSASSA-PSS needs them (they name its digest; absent means SHA-1). */
  signatureParams?: unknown;
  /** A CMS SignerInfo's digestAlgorithm (the digest of the content); required with rsaEncryption. */
  digestOid?: string;
  publicKey: pkijs.PublicKeyInfo;
}

/**
 * The cryptographic floor, judged at `at` (the time a proof of existence gives): no SHA-1 (or MD5) digest in a
 * signature made after 2016-01-01 (see DIGESTS for the dated table, modelled on the DSS default crypto policy and
 * ETSI TS 119 312); RSA keys < 2048 bits refused from 2019-01-01 (before: ≥ 1024), EC keys on curves other than
 * P-256/P-384/P-521 refused; unknown algorithms refused, and a key of the wrong type for the algorithm. `what` names
 * the signature in the problems ("the seal's signature").
 */
export function algorithmProblems(what: string, algorithm: SignatureAlgorithm, at: Date): string[] {
  const signature = SIGNATURES[algorithm.signatureAlgorithmOid];
  if (!signature) return [`${what}: its signature algorithm ${algorithm.signatureAlgorithmOid} is not one this validator accepts`];
  let digests: string[];
  try {
    digests =
      algorithm.signatureAlgorithmOid === RSASSA_PSS ? pssDigests(algorithm.signatureParams) : signature.digest ? [signature.digest] : [];
  } catch (err) {
    return [`${what}: its ${signature.name} parameters cannot be read (${(err as Error).message})`];
  }
  if (algorithm.digestOid) digests.push(algorithm.digestOid);
  if (!digests.length) return [`${what}: ${signature.name} names no digest algorithm`];
  const problems = [...new Set(digests)].flatMap((oid) => digestProblem(what, oid, at) ?? []);
  problems.push(...keyProblems(what, algorithm.publicKey, at, signature.key));
  return problems;
}

/** The floor over a CMS signer's signature: its signatureAlgorithm and digestAlgorithm, with the signer's key. */
export function signerInfoAlgorithmProblems(what: string, signerInfo: pkijs.SignerInfo, signer: pkijs.Certificate, at: Date): string[] {
  return algorithmProblems(
    what,
    {
      signatureAlgorithmOid: signerInfo.signatureAlgorithm.algorithmId,
      signatureParams: signerInfo.signatureAlgorithm.algorithmParams,
      digestOid: signerInfo.digestAlgorithm.algorithmId,
      publicKey: signer.subjectPublicKeyInfo,
    },
    at,
  );
}

/**
 * Convenience: the floor over a certificate's own signature (by its issuer's key) — skipped when `issuer` is
 * undefined, for a self-signed anchor, whose signature vouches for nothing — and over its key.
 */
export function certificateAlgorithmProblems(cert: pkijs.Certificate, issuer: pkijs.Certificate | undefined, at: Date): string[] {
  const name = describe(cert);
  const problems: string[] = [];
  if (issuer) {
    problems.push(
      ...algorithmProblems(
        `the signature on ${name}`,
        {
          signatureAlgorithmOid: cert.signatureAlgorithm.algorithmId,
          signatureParams: cert.signatureAlgorithm.algorithmParams,
          publicKey: issuer.subjectPublicKeyInfo,
        },
        at,
      ),
    );
  }
  problems.push(...keyProblems(`the key of ${name}`, cert.subjectPublicKeyInfo, at));
  return problems;
}

/** The floor over a whole chain as validatePath returns it (leaf first, anchor last; the anchor's signature skipped). */
export function chainAlgorithmProblems(chain: readonly pkijs.Certificate[], at: Date): string[] {
  return chain.flatMap((cert, i) => certificateAlgorithmProblems(cert, chain[i + 1], at));
}

// ---------------------------------------------------------------------------------------------------------------
// The ESS binding of the signer's certificate

const SIGNING_CERTIFICATE = '1.2.840.113549.1.9.16.2.12';
/** ESSCertIDv2 digests accepted: SHA-2 (RFC 5035's default is SHA-256); SHA-1 belongs to the v1 attribute. */
const ESS_V2_HASHES: Record<string, string> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};

/**
 * Whether one signing-certificate(-v2) attribute binds `signer`, or why not. SigningCertificate (RFC 2634 5.4) and
 * SigningCertificateV2 (RFC 5035 3) are SEQUENCE { certs SEQUENCE OF ESSCertID(v2), policies OPTIONAL }; an
 * ESSCertIDv2 is { hashAlgorithm DEFAULT sha256, certHash, issuerSerial OPTIONAL }, an ESSCertID { certHash (SHA-1),
 * issuerSerial OPTIONAL }; IssuerSerial is { issuer GeneralNames, serialNumber }.
 */
function essCertIdProblem(attribute: pkijs.Attribute, v2: boolean, signer: pkijs.Certificate): string | undefined {
  const label = v2 ? 'signing-certificate-v2' : 'signing-certificate';
  // RFC 2634 5.4 / RFC 5035 5.4: the attribute has a single value.
  if (attribute.values.length !== 1) return `the ${label} attribute has ${attribute.values.length} values (one is allowed)`;
  let hashName: string;
  let certHash: Uint8Array;
  let issuerSerial: asn1js.Sequence | undefined;
  try {
    // Read from the bytes it was read from (encoding the parsed value again cost as much as reading it), and at each
    // check: pkijs's GeneralNames reader below writes to the tree it reads, so a tree kept between checks would read
    // differently the second time.
    const block = attribute.values[0] as asn1js.BaseBlock;
    const value = parseDer(block.valueBeforeDecodeView.byteLength > 0 ? block.valueBeforeDecodeView : new Uint8Array(block.toBER(false)));
    if (!(value instanceof asn1js.Sequence)) throw new Error('not a SEQUENCE');
    const certs = value.valueBlock.value[0];
    if (!(certs instanceof asn1js.Sequence) || certs.valueBlock.value.length === 0) throw new Error('no certificate identifiers');
    // RFC 5035 / RFC 2634: "The first certificate identified in the sequence ... MUST be the certificate used to
    // verify the signature"; the others (the chain) are not this check's business.
    const first = certs.valueBlock.value[0];
    if (!(first instanceof asn1js.Sequence)) throw new Error('a certificate identifier that is not a SEQUENCE');
    const items = [...first.valueBlock.value];
    hashName = 'sha1';
    if (v2) {
      hashName = 'sha256';
      if (items[0] instanceof asn1js.Sequence) {
        const oid = new pkijs.AlgorithmIdentifier({ schema: items.shift() }).algorithmId;
        const accepted = ESS_V2_HASHES[oid];
        if (!accepted)
          return `the ${label} attribute identifies the certificate by a digest this validator does not accept (${DIGESTS[oid]?.name ?? oid})`;
        hashName = accepted;
      }
    }
    const hash = items.shift();
    if (!(hash instanceof asn1js.OctetString)) throw new Error('no certHash');
    certHash = hash.valueBlock.valueHexView;
    if (items[0] !== undefined) {
      if (!(items[0] instanceof asn1js.Sequence)) throw new Error('an issuerSerial that is not a SEQUENCE');
      issuerSerial = items.shift() as asn1js.Sequence;
    }
    if (items.length) throw new Error('unexpected fields');
  } catch (err) {
    return `the ${label} attribute cannot be read (${(err as Error).message})`;
  }
  // The binding itself: a certificate substituted after signing (same key, other name or purpose) has another hash.
  // SHA-256 (the usual) from the per-process memo of certificate hashes, which spares re-encoding the certificate.
  const expected =
    hashName === 'sha256' ? Buffer.from(summarize(signer).sha256, 'hex') : createHash(hashName).update(certificateDer(signer)).digest();
  if (!expected.equals(Buffer.from(certHash)))
    return `the ${label} attribute identifies another certificate than the signer's ${describe(signer)}`;
  if (issuerSerial) {
    try {
      const [names, serial] = issuerSerial.valueBlock.value;
      if (!(serial instanceof asn1js.Integer) || issuerSerial.valueBlock.value.length !== 2)
        throw new Error('not { issuer, serialNumber }');
      const issuer = new pkijs.GeneralNames({ schema: names });
      // CAdES has the issuer named by its distinguished name alone; pyHanko refuses any other name beside it.
      if (issuer.names.length !== 1 || issuer.names[0]!.type !== 4)
        return `the ${label} attribute's issuerSerial names the issuer otherwise than by its distinguished name alone`;
      const namesIssuer = issuer.names.some(
        (n) => n.type === 4 && n.value instanceof pkijs.RelativeDistinguishedNames && n.value.isEqual(signer.issuer),
      );
      if (!namesIssuer)
        return `the ${label} attribute's issuerSerial names another issuer than the signer's ("${formatName(signer.issuer)}")`;
      if (!Buffer.from(serial.valueBlock.valueHexView).equals(Buffer.from(signer.serialNumber.valueBlock.valueHexView))) {
        return `the ${label} attribute's issuerSerial names another serial number than the signer's certificate's`;
      }
    } catch (err) {
      return `the ${label} attribute's issuerSerial cannot be read (${(err as Error).message})`;
    }
  }
  return undefined;
}

/**
 * ESS: the signer's signed attributes carry signing-certificate-v2 (RFC 5035) or signing-certificate (RFC 2634,
 * SHA-1) whose first ESSCertID(v2) hash equals the hash of `signer`'s DER, and whose issuerSerial (when present)
 * names its issuer and serial. `requireV2`: a PAdES seal requires v2 (ETSI EN 319 122-1 5.2.2.3, EN 319 142-1); a
 * time-stamp token accepts either (RFC 3161 2.4.2, RFC 5816). Every instance present must match, and at most one of
 * each kind may be present. Returns a problem or undefined.
 */
export function essProblem(signerInfo: pkijs.SignerInfo, signer: pkijs.Certificate, options: { requireV2: boolean }): string | undefined {
  const attributes = signerInfo.signedAttrs?.attributes ?? [];
  const v2 = attributes.filter((a) => a.type === OID.signingCertificateV2);
  const v1 = attributes.filter((a) => a.type === SIGNING_CERTIFICATE);
  // RFC 5652 11 and RFC 2634 5.4: one instance of the attribute; two could name two certificates, and a validator
  // that read another one than we do would judge another signer.
  if (v2.length > 1 || v1.length > 1) return 'the signed attributes carry more than one signing-certificate attribute of a kind';
  if (!v2.length && !v1.length) {
    return "the signed attributes carry no signing-certificate-v2 (RFC 5035) or signing-certificate (RFC 2634) attribute: nothing binds the signer's certificate to the signature";
  }
  if (!v2.length && options.requireV2) {
    return "the signed attributes bind the signer's certificate only by SHA-1 (signing-certificate, RFC 2634); a PAdES seal needs signing-certificate-v2 (RFC 5035)";
  }
  for (const attribute of v2) {
    const problem = essCertIdProblem(attribute, true, signer);
    if (problem) return problem;
  }
  for (const attribute of v1) {
    const problem = essCertIdProblem(attribute, false, signer);
    if (problem) return problem;
  }
  return undefined;
}
