import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { readSignedData } from './cms-read.js';
import { chainExpiry, contentInfoDer, outsideValidity, signCms, verifyCms } from './cms.js';
import { chainAlgorithmProblems, essProblem, signerInfoAlgorithmProblems, timestampingCertificateProblems } from './certificate-policy.js';
import { type CertificateSummary, OID, randomSerial, type SigningIdentity, summarize } from './pki.js';

/**
 * A time-stamping authority (RFC 3161) that issues tokens in-process: the
 * provider sandbox's, which makes its seals PAdES B-T. Each token states
 * that a SHA-256 digest existed at `genTime`, signed by the TSA's own
 * certificate (time-stamping purpose only, under the sandbox CA).
 */
export class TimestampAuthority {
  readonly #identity: SigningIdentity;
  readonly #policy: string;

  /** `policy`: the OID of the TSA policy the tokens are issued under. */
  constructor(identity: SigningIdentity, policy: string) {
    this.#identity = identity;
    this.#policy = policy;
  }

  /** The OID of the policy every token is issued under: a request that asks for another is refused (RFC 3161 2.4.2). */
  get policy(): string {
    return this.#policy;
  }

  /**
   * A TimeStampToken (a ContentInfo, DER) over `digest`, the SHA-256 of the stamped data. `nonce`: the content
   * octets of the request's nonce INTEGER, echoed in the token; `certReq`: whether the token carries the TSA's
   * certificate (by default it does).
   */
  async stamp(digest: Uint8Array, at = new Date(), options: StampOptions = {}): Promise<Buffer> {
    const tstInfo = new pkijs.TSTInfo({
      version: 1,
      policy: this.#policy,
      messageImprint: new pkijs.MessageImprint({
        hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }),
        hashedMessage: new asn1js.OctetString({ valueHex: digest }),
      }),
      serialNumber: randomSerial(),
      // Whole seconds: GeneralizedTime without fractions, which every validator reads.
      genTime: new Date(Math.floor(at.getTime() / 1000) * 1000),
      accuracy: new pkijs.Accuracy({ seconds: 1 }),
      // The requester matches the nonce byte for byte (RFC 3161 2.4.2), so its octets are copied, never re-encoded.
      ...(options.nonce ? { nonce: new asn1js.Integer({ valueHex: options.nonce }) } : {}),
    });
    const der = new Uint8Array(tstInfo.toSchema().toBER(false));
    const certReq = options.certReq ?? true;
    const token = await signCms(
      this.#identity,
      { type: OID.tstInfo, digest: createHash('sha256').update(der).digest(), eContent: der },
      // RFC 3161 2.4.1: with certReq, the TSA's certificate is in the token; a validator takes the rest from its anchors.
      certReq ? [this.#identity.certificate] : [],
    );
    // Without certReq the certificates field "MUST not be present" (2.4.1), and pkijs writes an empty set for an
    // empty list; it is outside what the signature covers, so dropping it after signing is safe.
    if (!certReq) delete token.certificates;
    return contentInfoDer(token);
  }
}

/** What a time-stamp request asks of the token beyond the digest (RFC 3161 2.4.1). */
export interface StampOptions {
  /** The content octets of the request's nonce INTEGER (two's complement, as encoded). */
  nonce?: Uint8Array | ArrayBuffer;
  /** false: the token carries no certificate; the requester already has the TSA's. Default true. */
  certReq?: boolean;
}

/** What checking a signature's time-stamp found: valid unless `problems` say otherwise. */
export interface SignatureTimestampCheck {
  timestamp: TimestampSummary | null;
  problems: string[];
  /** Until when the authority's path can be validated. */
  expiresAt: Date | null;
  /** The authority's path to its anchor, when it chains. */
  chain: pkijs.Certificate[] | null;
  /** The time the token claims, read before anything about it is known to hold. */
  genTime: Date | null;
}

/** A verified signature time-stamp: when the signature value existed, by whose word. */
export interface TimestampSummary {
  /** The token's genTime, ISO 8601. */
  time: string;
  authority: CertificateSummary;
}

/**
 * Checks the signature time-stamp of `signer`, if it has one (PAdES B-T): the
 * token's CMS verifies and its authority chains to `trustAnchors`, the
 * authority's certificate is for time-stamping alone, and the token's
 * message imprint is the SHA-256 of this signature's value. `null` when the
 * signature carries no time-stamp (B-B); never throws on hostile input.
 */
export async function checkSignatureTimestamp(
  signer: pkijs.SignerInfo,
  trustAnchors: readonly pkijs.Certificate[],
  judgedAt?: Date,
  pool: readonly pkijs.Certificate[] = [],
): Promise<SignatureTimestampCheck | null> {
  const attribute = signer.unsignedAttrs?.attributes.find((a) => a.type === OID.signatureTimeStampToken);
  if (!attribute) return null;
  const problems: string[] = [];
  let token: pkijs.SignedData;
  let info: pkijs.TSTInfo;
  try {
    const value = attribute.values[0] as asn1js.BaseBlock | undefined;
    if (!value) throw new Error('the attribute holds no token');
    token = readSignedData(value.valueBeforeDecodeView);
    const eContent = token.encapContentInfo.eContent;
    if (token.encapContentInfo.eContentType !== OID.tstInfo || !eContent) throw new Error('its content is not a TSTInfo');
    info = pkijs.TSTInfo.fromBER(eContent.getValue());
  } catch (err) {
    return {
      timestamp: null,
      problems: [`the signature time-stamp is not a readable RFC 3161 token: ${(err as Error).message}`],
      expiresAt: null,
      chain: null,
      genTime: null,
    };
  }

  const signature = signer.signature.valueBlock.valueHexView;
  const imprint = info.messageImprint;
  if (
    imprint.hashAlgorithm.algorithmId !== OID.sha256 ||
    !Buffer.from(imprint.hashedMessage.valueBlock.valueHexView).equals(createHash('sha256').update(signature).digest())
  ) {
    // pkijs would refuse it too, with a vaguer message; this one names the cause.
    return {
      timestamp: null,
      problems: ['the signature time-stamp is for other data than this signature'],
      expiresAt: null,
      chain: null,
      genTime: null,
    };
  }
  // Judged when a later time-stamp proves the token existed (or now, when none does); by default at its own time.
  const verified = await verifyCms(token, signature, trustAnchors, judgedAt ?? info.genTime, pool);
  if (!verified.signatureValid) problems.push(`the signature time-stamp does not verify: ${verified.message}`);
  else if (verified.trusted === false) problems.push(`the time-stamping authority does not chain to a trust anchor: ${verified.message}`);
  const authority = verified.signer;
  if (authority && verified.signatureValid)
    problems.push(...tokenProblems('the signature time-stamp', token, authority, verified.chain, info.genTime));
  const lapsed = judgedAt && verified.chain ? outsideValidity(verified.chain, judgedAt) : null;
  if (lapsed) problems.push(`the signature time-stamp no longer vouches at ${judgedAt!.toISOString()}: ${lapsed}`);
  return {
    timestamp: authority ? { time: info.genTime.toISOString(), authority: summarize(authority) } : null,
    problems,
    expiresAt: verified.chain ? chainExpiry(verified.chain) : null,
    chain: verified.chain,
    genTime: info.genTime,
  };
}

/**
 * What a time-stamp token must be beyond a valid signature: by a certificate for time-stamping alone (RFC 3161
 * 2.3), bound to it by an ESS signing-certificate attribute (RFC 3161 2.4.2; v1 or v2), with algorithms above the
 * cryptographic floor at the token's own time.
 */
export function tokenProblems(
  label: string,
  token: pkijs.SignedData,
  authority: pkijs.Certificate,
  chain: readonly pkijs.Certificate[] | null,
  genTime: Date,
): string[] {
  const problems = timestampingCertificateProblems(authority).map((p) => `${label}: ${p}`);
  const signerInfo = token.signerInfos[0];
  const ess = signerInfo ? essProblem(signerInfo, authority, { requireV2: false }) : 'it has no signer';
  if (ess) problems.push(`${label}: ${ess}`);
  if (signerInfo) problems.push(...signerInfoAlgorithmProblems(label, signerInfo, authority, genTime));
  if (chain) problems.push(...chainAlgorithmProblems(chain, genTime).map((p) => `${label}: ${p}`));
  return problems;
}
