import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { OID } from '../../../../src/evidence/pki.js';
import type { TimestampAuthority } from '../../../../src/evidence/timestamp.js';

/** PKIFailureInfo bits (RFC 3161 2.4.2) the TSA answers with. */
const FAILURE = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
} as const;
type Failure = keyof typeof FAILURE;

class Rejection extends Error {
  constructor(
    readonly failure: Failure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The answer of `tsa` to an RFC 3161 TimeStampReq (DER, as POSTed with
 * `application/timestamp-query`): a DER TimeStampResp, granted with a token
 * stamped at `now`, or a rejection whose failInfo and statusString say why.
 * Hostile bytes get a rejection, never an exception: a TSA answers every
 * request in the protocol (2.4.2), and an HTTP 500 would tell the client less.
 */
export async function answerTimestampRequest(tsa: TimestampAuthority, request: Uint8Array, now: Date): Promise<Buffer> {
  let accepted: { digest: Uint8Array; nonce?: Uint8Array; certReq: boolean };
  try {
    accepted = readRequest(request, tsa.policy);
  } catch (err) {
    if (err instanceof Rejection) return rejection(err.failure, err.message);
    return rejection('badDataFormat', `not a DER TimeStampReq: ${(err as Error).message}`);
  }
  const token = await tsa.stamp(accepted.digest, now, {
    ...(accepted.nonce ? { nonce: accepted.nonce } : {}),
    certReq: accepted.certReq,
  });
  // The token goes in as stamped rather than parsed and re-encoded: its bytes are what its signature was made over.
  const status = Buffer.from(new pkijs.PKIStatusInfo({ status: pkijs.PKIStatus.granted }).toSchema().toBER(false));
  return derSequence(status, token);
}

function readRequest(bytes: Uint8Array, policy: string): { digest: Uint8Array; nonce?: Uint8Array; certReq: boolean } {
  const parsed = asn1js.fromBER(bytes);
  if (parsed.offset === -1) throw new Rejection('badDataFormat', `not ASN.1: ${parsed.result.error}`);
  // A request with bytes after it is not one request; answering its first part would hide the client's bug.
  if (parsed.offset !== bytes.byteLength) throw new Rejection('badDataFormat', 'bytes follow the TimeStampReq');
  const req = new pkijs.TimeStampReq({ schema: parsed.result });
  if (req.version !== 1) throw new Rejection('badRequest', `request version ${req.version}; only v1 exists`);

  const imprint = req.messageImprint;
  if (imprint.hashAlgorithm.algorithmId !== OID.sha256) {
    throw new Rejection('badAlg', `hash algorithm ${imprint.hashAlgorithm.algorithmId}; only SHA-256 (${OID.sha256}) is accepted`);
  }
  // SHA-256 takes no parameters: absent or NULL are the two spellings in use (RFC 5754 2); anything else is another algorithm.
  const params = imprint.hashAlgorithm.algorithmParams as asn1js.AsnType | undefined;
  if (params !== undefined && !(params instanceof asn1js.Null)) throw new Rejection('badAlg', 'SHA-256 with parameters');
  const hashed = imprint.hashedMessage;
  // A constructed (BER) OCTET STRING has its octets in pieces: not the DER the token's imprint must repeat.
  if (hashed.idBlock.isConstructed) throw new Rejection('badDataFormat', 'the hashed message is a constructed OCTET STRING');
  const digest = hashed.valueBlock.valueHexView;
  if (digest.byteLength !== 32) throw new Rejection('badAlg', `a SHA-256 hash is 32 bytes, this one is ${digest.byteLength}`);

  // Compared encoded: asn1js reads an arc beyond 2^53 (as in a UUID OID) back as `{hex}`, never as the dotted text.
  const asked = req.reqPolicy === undefined ? undefined : (parsed.result as asn1js.Sequence).valueBlock.value[2];
  if (
    asked &&
    !Buffer.from(asked.valueBeforeDecodeView).equals(new Uint8Array(new asn1js.ObjectIdentifier({ value: policy }).toBER(false)))
  ) {
    throw new Rejection('unacceptedPolicy', `policy ${req.reqPolicy} asked; this TSA issues under ${policy} only`);
  }
  // No extension is understood, and the client cannot learn which ones were ignored: refusing is the only honest answer.
  if (req.extensions?.length) throw new Rejection('unacceptedExtension', 'no request extension is supported');

  let nonce: Uint8Array | undefined;
  if (req.nonce) {
    nonce = req.nonce.valueBlock.valueHexView;
    // Echoed byte for byte into the token, so a non-minimal INTEGER would make the token BER.
    if (nonce.byteLength === 0 || (nonce.byteLength > 1 && isRedundantSign(nonce[0]!, nonce[1]!))) {
      throw new Rejection('badDataFormat', 'the nonce is not a DER INTEGER');
    }
  }
  return { digest, ...(nonce ? { nonce } : {}), certReq: req.certReq === true };
}

/** X.690 8.3.2: the first nine bits of an INTEGER's octets are never all equal. */
function isRedundantSign(first: number, second: number): boolean {
  return (first === 0x00 && second < 0x80) || (first === 0xff && second >= 0x80);
}

function rejection(failure: Failure, reason: string): Buffer {
  return der(
    new pkijs.TimeStampResp({
      status: new pkijs.PKIStatusInfo({
        status: pkijs.PKIStatus.rejection,
        statusStrings: [new asn1js.Utf8String({ value: reason })],
        failInfo: failureBits(FAILURE[failure]),
      }),
    }),
  );
}

/** A named-bit BIT STRING with one bit set, in DER: trailing zero bits dropped (X.690 11.2.2). */
function failureBits(bit: number): asn1js.BitString {
  const octets = new Uint8Array(Math.floor(bit / 8) + 1);
  octets[octets.length - 1] = 0x80 >> (bit % 8);
  return new asn1js.BitString({ valueHex: octets, unusedBits: 7 - (bit % 8) });
}

function der(response: pkijs.TimeStampResp): Buffer {
  return Buffer.from(response.toSchema().toBER(false));
}

/** A DER SEQUENCE of already-encoded elements (X.690 8.1.3: definite length, shortest form). */
function derSequence(...elements: Uint8Array[]): Buffer {
  const body = Buffer.concat(elements);
  const n = body.length;
  const length =
    n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([0x30, ...length]), body]);
}
