import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { MAX_ENTRY_NODES } from './der-memo.js';

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
  const certificates = cut ? remembered(cut.certificates) : undefined;
  const asn = certificates ? asn1js.fromBER(cut!.rest, { maxNodes: MAX_NODES - certificates.spent }) : asn1js.fromBER(der);
  if (asn.offset === -1) throw new Error(asn.result.error);
  const contentInfo = new pkijs.ContentInfo({ schema: asn.result });
  if (contentInfo.contentType !== pkijs.ContentInfo.SIGNED_DATA) throw new Error('not CMS SignedData');
  const signedData = new pkijs.SignedData({ schema: contentInfo.content });
  if (certificates) signedData.certificates = certificates.parsed.map((c) => c.certificate);
  return signedData;
}

/**
 * Each certificate, parsed or remembered, and the nodes they spend of asn1js's budget for one parse (with the
 * field around them); undefined as soon as one does not parse or the budget runs out, for the CMS to be read
 * whole and refused as pkijs refuses it.
 */
function remembered(ders: Uint8Array[]): { parsed: Parsed[]; spent: number } | undefined {
  const parsed: Parsed[] = [];
  let spent = 1;
  for (const der of ders) {
    const one = parsedCertificate(der);
    if (!one || one.depth > MAX_DEPTH - 5) return undefined;
    spent += one.nodes;
    if (spent >= MAX_NODES) return undefined;
    parsed.push(one);
  }
  return { parsed, spent };
}

/** asn1js's defaults for one parse (its DEFAULT_MAX_NODES, DEFAULT_MAX_DEPTH). */
const MAX_NODES = asn1js.DEFAULT_MAX_NODES;
const MAX_DEPTH = asn1js.DEFAULT_MAX_DEPTH;

interface Parsed {
  certificate: pkijs.Certificate;
  /** The nodes and the depth of its ASN.1 tree, as asn1js counts them against its limits. */
  nodes: number;
  depth: number;
}

/**
 * Remembered certificates: a worker sees a handful (its providers' signers and TSAs, their CAs). Bounded in
 * count, in bytes and in the nodes the parses hold (as der-memo.ts bounds its own: a few KiB of DER can be thousands
 * of nodes, each about a kilobyte of heap), and only certificates of a plausible size, so a hostile CMS cannot make
 * it hold much.
 */
const PARSED = new Map<string, Parsed>();
const PARSED_MAX = 64;
const REMEMBERED_MAX_BYTES = 16 * 1024;
const REMEMBERED_MAX_NODES = 16_384;
let rememberedNodes = 0;

/** The certificate with these DER bytes, parsed once; undefined when it does not parse (the CMS is read whole). */
function parsedCertificate(der: Uint8Array): Parsed | undefined {
  const key = createHash('sha256').update(der).digest('hex');
  const known = PARSED.get(key);
  if (known) return known;
  // A copy: the certificate keeps views of the bytes it was read from, and the CMS around them is not to be held.
  const asn = asn1js.fromBER(Uint8Array.from(der));
  if (asn.offset === -1 || asn.offset !== der.length) return undefined;
  let parsed: Parsed;
  try {
    parsed = { certificate: new pkijs.Certificate({ schema: asn.result }), ...treeSize(asn.result) };
  } catch {
    return undefined;
  }
  if (der.length <= REMEMBERED_MAX_BYTES && parsed.nodes <= MAX_ENTRY_NODES) {
    PARSED.set(key, parsed);
    rememberedNodes += parsed.nodes;
    for (const [oldest, entry] of PARSED) {
      if (PARSED.size <= PARSED_MAX && rememberedNodes <= REMEMBERED_MAX_NODES) break;
      PARSED.delete(oldest);
      rememberedNodes -= entry.nodes;
    }
  }
  return parsed;
}

/** Nodes and depth of a parsed tree: each block, and the blocks inside it (constructed, or embedded in a string). */
function treeSize(block: asn1js.AsnType): { nodes: number; depth: number } {
  const inner = (block as { valueBlock?: { value?: unknown } }).valueBlock?.value;
  let nodes = 1;
  let depth = 1;
  if (Array.isArray(inner)) {
    for (const child of inner as asn1js.AsnType[]) {
      const size = treeSize(child);
      nodes += size.nodes;
      depth = Math.max(depth, size.depth + 1);
    }
  }
  return { nodes, depth };
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
  // Bytes after the ContentInfo (a PDF's /Contents is zero-padded) are ignored, as asn1js ignores them.
  const contentInfo = read(der, 0, der.length);
  if (contentInfo?.tag !== SEQUENCE) return undefined;
  const [type, explicit, ...more] = inside(der, contentInfo) ?? [];
  if (type?.tag !== OBJECT_IDENTIFIER || explicit?.tag !== CONTEXT_0 || more.length > 0) return undefined;
  const [signedData, ...after] = inside(der, explicit) ?? [];
  if (signedData?.tag !== SEQUENCE || after.length > 0) return undefined;
  // Only where SignedData has them (after version, digestAlgorithms and encapContentInfo), once: anything else
  // is read whole, so pkijs judges it as it would.
  const fields = inside(der, signedData);
  if (!fields || fields.length < 5) return undefined;
  const [version, digests, content, certificates] = fields as [Tlv, Tlv, Tlv, Tlv];
  if (version.tag !== INTEGER || digests.tag !== SET || content.tag !== SEQUENCE || certificates.tag !== CONTEXT_0) return undefined;
  if (fields.slice(4).some((f) => f.tag === CONTEXT_0)) return undefined;
  const each = inside(der, certificates);
  if (!each || each.length === 0 || each.some((c) => c.tag !== SEQUENCE)) return undefined;

  // Moved next to other bytes, a field must end where it says: a child running past its parent's end would
  // read into different bytes than in the whole.
  const others = fields.filter((f) => f !== certificates);
  if (!others.every((f) => nested(der, f, 0))) return undefined;
  const kept = others.map((f) => der.subarray(f.start, f.end));
  const signed = wrap(SEQUENCE, kept);
  const rest = wrap(SEQUENCE, [der.subarray(type.start, type.end), wrap(CONTEXT_0, [signed])]);
  return { rest, certificates: each.map((c) => der.subarray(c.start, c.end)) };
}

const SEQUENCE = 0x30;
const SET = 0x31;
const INTEGER = 0x02;
const OBJECT_IDENTIFIER = 0x06;
const CONSTRUCTED = 0x20;
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

/** Whether every constructed TLV within `t` is exactly filled by its children, down to primitives. */
function nested(der: Uint8Array, t: Tlv, depth: number): boolean {
  if ((t.tag & CONSTRUCTED) === 0) return true;
  if (depth > MAX_DEPTH) return false;
  const children = inside(der, t);
  return children !== undefined && children.every((c) => nested(der, c, depth + 1));
}

function wrap(tag: number, parts: Uint8Array[]): Uint8Array {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const lengthBytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) lengthBytes.unshift(n % 256);
  const head = length < 0x80 ? [tag, length] : [tag, 0x80 | lengthBytes.length, ...lengthBytes];
  return Buffer.concat([Buffer.from(head), ...parts]);
}
