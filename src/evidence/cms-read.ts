import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/**
 * Reads a CMS ContentInfo that holds SignedData (a seal, a time-stamp token). Every seal a worker checks carries
 * the same few certificates (the provider's signer and the TSA's, their CAs), and parsing them was most of a seal
 * check's CPU: pkijs builds and matches a schema for each name, extension and general name. So the certificates
 * are cut out of the DER before it is parsed, each one parsed once per worker (by the SHA-256 of its DER) and set
 * back on the SignedData. A certificate's DER fixes everything read from it, so a remembered one is the same
 * certificate; what is judged about it (its dates, its chain, its revocation) is judged at each use, as before.
 *
 * A structure this reading does not follow (BER lengths, certificate choices other than a plain certificate, no
 * certificates) is parsed whole, as pkijs would.
 */
export function readSignedData(der: Uint8Array): pkijs.SignedData {
  const cut = withoutCertificates(der);
  const asn = asn1js.fromBER(cut?.rest ?? der);
  if (asn.offset === -1) throw new Error(asn.result.error);
  const contentInfo = new pkijs.ContentInfo({ schema: asn.result });
  if (contentInfo.contentType !== pkijs.ContentInfo.SIGNED_DATA) throw new Error('not CMS SignedData');
  const signedData = new pkijs.SignedData({ schema: contentInfo.content });
  if (cut) signedData.certificates = cut.certificates.map(certificateOf);
  return signedData;
}

const PARSED = new Map<string, pkijs.Certificate>();
const PARSED_MAX = 1_000;

function certificateOf(der: Uint8Array): pkijs.Certificate {
  const key = createHash('sha256').update(der).digest('hex');
  let cert = PARSED.get(key);
  if (!cert) {
    // A copy: the certificate keeps views of the bytes it was read from, and the CMS around them is not to be held.
    cert = pkijs.Certificate.fromBER(Uint8Array.from(der));
    if (PARSED.size >= PARSED_MAX) PARSED.delete(PARSED.keys().next().value!);
    PARSED.set(key, cert);
  }
  return cert;
}

interface Tlv {
  tag: number;
  start: number;
  /** Where its value starts. */
  value: number;
  end: number;
}

/** The DER without SignedData's `certificates` [0], and each certificate's DER; undefined when it cannot be cut. */
function withoutCertificates(der: Uint8Array): { rest: Uint8Array; certificates: Uint8Array[] } | undefined {
  const contentInfo = read(der, 0, der.length);
  if (contentInfo?.tag !== SEQUENCE || contentInfo.end !== der.length) return undefined;
  const [type, explicit, ...more] = inside(der, contentInfo) ?? [];
  if (type?.tag !== OBJECT_IDENTIFIER || explicit?.tag !== CONTEXT_0 || more.length > 0) return undefined;
  const [signedData, ...after] = inside(der, explicit) ?? [];
  if (signedData?.tag !== SEQUENCE || after.length > 0) return undefined;
  const fields = inside(der, signedData);
  const certificates = fields?.filter((f) => f.tag === CONTEXT_0);
  if (!fields || certificates?.length !== 1) return undefined;
  const each = inside(der, certificates[0]!);
  if (!each || each.length === 0 || each.some((c) => c.tag !== SEQUENCE)) return undefined;

  const kept = fields.filter((f) => f.tag !== CONTEXT_0).map((f) => der.subarray(f.start, f.end));
  const signed = wrap(SEQUENCE, kept);
  const rest = wrap(SEQUENCE, [der.subarray(type.start, type.end), wrap(CONTEXT_0, [signed])]);
  return { rest, certificates: each.map((c) => der.subarray(c.start, c.end)) };
}

const SEQUENCE = 0x30;
const OBJECT_IDENTIFIER = 0x06;
/** [0], constructed: ContentInfo's explicit content, and SignedData's implicit certificate set. */
const CONTEXT_0 = 0xa0;

/** The TLV at `at`, ending by `limit`, in DER's definite form with a one-byte tag; undefined otherwise. */
function read(der: Uint8Array, at: number, limit: number): Tlv | undefined {
  if (at + 2 > limit) return undefined;
  const tag = der[at]!;
  if ((tag & 0x1f) === 0x1f) return undefined;
  let length = der[at + 1]!;
  let value = at + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4 || value + n > limit) return undefined;
    length = 0;
    for (let k = 0; k < n; k++) length = length * 256 + der[value++]!;
  }
  const end = value + length;
  return end <= limit ? { tag, start: at, value, end } : undefined;
}

/** The TLVs that exactly fill a constructed one's value. */
function inside(der: Uint8Array, parent: Tlv): Tlv[] | undefined {
  const out: Tlv[] = [];
  for (let at = parent.value; at < parent.end;) {
    const t = read(der, at, parent.end);
    if (!t) return undefined;
    out.push(t);
    at = t.end;
  }
  return out;
}

function wrap(tag: number, parts: Uint8Array[]): Uint8Array {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const lengthBytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) lengthBytes.unshift(n % 256);
  const head = length < 0x80 ? [tag, length] : [tag, 0x80 | lengthBytes.length, ...lengthBytes];
  return Buffer.concat([Buffer.from(head), ...parts]);
}
