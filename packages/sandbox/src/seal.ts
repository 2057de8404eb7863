import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PDF } from '@libpdf/core';
import * as pkijs from 'pkijs';
import { sealPdf } from './evidence/pades-sign.js';
import { withGlobalFetchRefused } from '../../../src/http/outbound.js';
import { RevocationAuthority, type Revocation } from './evidence/revocation.js';
import { TimestampAuthority } from '../../../src/evidence/timestamp.js';
import { answerTimestampRequest } from './evidence/tsa-protocol.js';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  parseCertificates,
  summarize,
  type CertificateSummary,
  type PemKeyPair,
  type SigningIdentity,
} from '../../../src/evidence/pki.js';
import { formatPin, spkiSha256 } from '../../../src/evidence/trust.js';

/**
 * The sandbox's TSA policy: a UUID-based OID (ITU-T X.667 arc 2.25), which
 * needs no registration; it only names what the sandbox's tokens promise
 * (its own clock, to the second).
 */
export const TSA_POLICY = '2.25.324509471234506599763462635830418565645';

/**
 * The sandbox's seal: a root CA generated on first start, a document-signing
 * certificate and a time-stamping authority's certificate it issued, kept as
 * PEM in the data directory (keys 0600) so every restart seals with the same
 * identities. Seals are PAdES B-LTA (`seal` below): time-stamped by the sandbox's TSA. Clients
 * trust the CA from `GET /sandbox/ca.pem`.
 */
export class SandboxSeal {
  readonly caCertificate: string;
  /**
   * The keys the sandbox seals with, as clients pin them (`sha256/<base64>` of each SubjectPublicKeyInfo): the
   * current seal's and every retired one's, so archives sealed before a renewal still verify. Served at
   * GET /sandbox/pins; a worker's ESIGN_SEAL_PINS.
   */
  readonly sealPins: readonly string[];
  readonly certificate: CertificateSummary;
  readonly timestampAuthority: CertificateSummary;
  readonly #identity: SigningIdentity;
  readonly #tsa: TimestampAuthority;
  readonly #revocation: RevocationAuthority;
  readonly #tsaCertificate: pkijs.Certificate;
  readonly #dir: string;
  readonly #retiredSeals: readonly pkijs.Certificate[];

  private constructor(
    caCertificate: string,
    identity: SigningIdentity,
    tsa: SigningIdentity,
    ca: SigningIdentity,
    retiredSeals: readonly pkijs.Certificate[],
    dir: string,
    revoked: readonly Revocation[],
  ) {
    this.#dir = dir;
    this.#retiredSeals = retiredSeals;
    this.caCertificate = caCertificate;
    this.sealPins = [...new Set([identity.certificate, ...retiredSeals].map((c) => formatPin(spkiSha256(c))))];
    this.#identity = identity;
    this.#revocation = new RevocationAuthority(ca, 7, revoked);
    this.certificate = summarize(identity.certificate);
    this.#tsa = new TimestampAuthority(tsa, TSA_POLICY);
    this.#tsaCertificate = tsa.certificate;
    this.timestampAuthority = summarize(tsa.certificate);
  }

  /**
   * Opens the sandbox's PKI in `dir`, creating what is missing, and renews the seal's and the TSA's certificates
   * when they have less than `renewBefore` left (new keys; the old certificates are kept in `retired/`), so a
   * sandbox that runs for years never seals with an expired certificate. `now` is the sandbox's clock.
   */
  static async open(dir: string, options: { now?: Date; renewBefore?: number } = {}): Promise<SandboxSeal> {
    const now = options.now ?? new Date();
    const renewBefore = options.renewBefore ?? RENEW_BEFORE_MS;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const ca = await loadOrCreate(dir, 'ca', () => createCertificateAuthority({ O: 'esign sandbox', CN: 'esign sandbox root CA' }, now));
    const issue = (name: 'seal' | 'tsa') =>
      name === 'seal'
        ? issueSigningCertificate(ca, { O: 'esign sandbox', CN: 'esign sandbox document seal' }, now)
        : issueSigningCertificate(ca, { O: 'esign sandbox', CN: 'esign sandbox time-stamping authority' }, now, 3, 'time-stamping');
    // Data directories from before the sandbox stamped its seals get their TSA on the next start.
    const signer = await renewIfDue(dir, 'seal', await loadOrCreate(dir, 'seal', () => issue('seal')), now, renewBefore, () =>
      issue('seal'),
    );
    const tsa = await renewIfDue(dir, 'tsa', await loadOrCreate(dir, 'tsa', () => issue('tsa')), now, renewBefore, () => issue('tsa'));
    return new SandboxSeal(
      ca.certificate,
      await loadSigningIdentity(signer, [ca.certificate]),
      await loadSigningIdentity(tsa, [ca.certificate]),
      await loadSigningIdentity(ca, []),
      await retired(dir, 'seal'),
      dir,
      await readFile(join(dir, REVOKED), 'utf8').then(
        (text) => JSON.parse(text) as Revocation[],
        () => [],
      ),
    );
  }

  /**
   * Seals a finished PDF at PAdES B-LTA: an invisible signature over the whole file, time-stamped by the
   * sandbox's TSA (B-T), then the validation data for every certificate involved (B-LT) and a document
   * time-stamp over all of it (B-LTA), as incremental updates.
   */
  async seal(pdf: Uint8Array, reason: string, signingTime: Date): Promise<Buffer> {
    const sealed = await sealPdf(pdf, this.#identity, {
      reason,
      location: 'esign provider sandbox',
      contactInfo: 'sandbox',
      signingTime,
      timestampAuthority: this.#tsa,
    });
    return this.archiveTimestamp(sealed);
  }

  /**
   * Revokes the seal's certificate now (keyCompromise), as a provider whose sealing key leaked would: from then on
   * the CA's OCSP answers say "revoked" and its CRL lists it. The sandbox goes on sealing with it, so that an
   * archive can be shown refusing what a compromised key sealed (the test control POST /_sandbox/pki/seal/revoke).
   */
  async revokeSeal(at = new Date()): Promise<Revocation> {
    const all = this.#revocation.revoke(this.#identity.certificate, at);
    await writeAtomically(join(this.#dir, REVOKED), JSON.stringify(all, null, 2));
    return all.find((r) => r.serialNumber === this.certificate.serialNumber)!;
  }

  /** The CA's current CRL (DER), served at /sandbox/ca.crl. */
  crl(): Promise<Buffer> {
    return this.#revocation.crl();
  }

  /** The CA's OCSP responder (RFC 6960), served at POST /sandbox/ocsp: it knows the seal's (current and retired) and the TSA's certificates. */
  ocspAnswer(request: Uint8Array): Promise<Buffer> {
    // Retired seals too: an archive renewing the evidence of a seal made before a renewal asks about its certificate.
    return this.#revocation.answer(request, [this.#identity.certificate, this.#tsaCertificate, ...this.#retiredSeals]);
  }

  /**
   * The TSA's answer to an RFC 3161 request, served at POST /sandbox/tsa: what an archive renews a seal's B-LTA
   * evidence with, long after the sandbox sealed it.
   */
  timestampAnswer(request: Uint8Array): Promise<Buffer> {
    return answerTimestampRequest(this.#tsa, request, new Date());
  }

  /**
   * Adds fresh validation data and a document time-stamp to a sealed PDF (@libpdf/core's incremental DSS and
   * DocTimeStamp updates; our TSA and our CA's OCSP responses and CRL): what makes B-LTA, and what renews it.
   */
  async archiveTimestamp(pdf: Uint8Array): Promise<Buffer> {
    const doc = await PDF.load(pdf);
    const ours = async (der: Uint8Array) => {
      const cert = pkijs.Certificate.fromBER(der);
      return (await this.#revocation.issued(cert)) ? cert : undefined;
    };
    // addArchivalData gathers validation data for every signed field of the document, a field the caller planted in
    // the PDF it uploaded included, and walks each certificate's AIA caIssuers URL with the globalThis.fetch it takes
    // when it starts (it accepts no fetch of ours): started with a fetch that refuses, no certificate in the document
    // makes the sandbox request anything. Its own seal needs no walk (the CMS carries the chain up to the CA, the
    // TSA's certificate names no URL), and revocation data comes from its own CA, below, for what it issued only.
    const { bytes } = await withGlobalFetchRefused(() =>
      doc.addArchivalData({
        timestampAuthority: { timestamp: async (digest) => new Uint8Array(await this.#tsa.stamp(digest)) },
        revocationProvider: {
          getOCSP: async (der) => {
            const cert = await ours(der);
            return cert ? new Uint8Array(await this.#revocation.ocsp(cert)) : null;
          },
          getCRL: async (der) => ((await ours(der)) ? new Uint8Array(await this.#revocation.crl()) : null),
        },
      }),
    );
    return Buffer.from(bytes);
  }
}

/** What the CA revoked, kept beside its keys. */
const REVOKED = 'revoked.json';

/** A year: the seal's and the TSA's certificates (three years) are renewed when less than this is left. */
const RENEW_BEFORE_MS = 365 * 24 * 60 * 60 * 1000;

async function renewIfDue(
  dir: string,
  name: string,
  pair: PemKeyPair,
  now: Date,
  renewBefore: number,
  issue: () => Promise<PemKeyPair>,
): Promise<PemKeyPair> {
  const current = summarize(parseCertificates(pair.certificate)[0]!);
  if (Date.parse(current.notAfter) - now.getTime() > renewBefore) return pair;
  const retired = join(dir, 'retired');
  await mkdir(retired, { recursive: true, mode: 0o700 });
  await writeFile(join(retired, `${name}-${current.serialNumber}.pem`), pair.certificate);
  const fresh = await issue();
  await writeAtomically(join(dir, `${name}.key`), fresh.privateKey, 0o600);
  await writeAtomically(join(dir, `${name}.pem`), fresh.certificate);
  return fresh;
}

/** The certificates renewIfDue retired under `name`. */
async function retired(dir: string, name: string): Promise<pkijs.Certificate[]> {
  const files = await readdir(join(dir, 'retired')).catch(() => [] as string[]);
  const mine = files.filter((f) => f.startsWith(`${name}-`) && f.endsWith('.pem')).sort();
  return (await Promise.all(mine.map(async (f) => parseCertificates(await readFile(join(dir, 'retired', f), 'utf8'))))).flat();
}

async function writeAtomically(path: string, text: string, mode?: number): Promise<void> {
  await writeFile(`${path}.tmp`, text, mode === undefined ? {} : { mode });
  await rename(`${path}.tmp`, path);
}

async function loadOrCreate(dir: string, name: string, create: () => Promise<PemKeyPair>): Promise<PemKeyPair> {
  const certPath = join(dir, `${name}.pem`);
  const keyPath = join(dir, `${name}.key`);
  try {
    return { certificate: await readFile(certPath, 'utf8'), privateKey: await readFile(keyPath, 'utf8') };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const pair = await create();
  // Key first, certificate last (each atomically): a certificate on disk always has its key.
  await writeAtomically(keyPath, pair.privateKey, 0o600);
  await writeAtomically(certPath, pair.certificate);
  return pair;
}
