// src/evidence/certificate-policy.ts: path validation (RFC 5280 6.1), the purposes of a seal's and a time-stamping
// authority's certificate, the cryptographic floor and the ESS signing-certificate binding. Certificates are built
// here with node:crypto keys (RSA of any size, P-256, secp256k1) and pkijs structures, each with exactly the flaw
// under test; the sandbox's own profile (src/evidence/pki.ts, RSA-3072) must pass everything. Every check has a
// test that fails when the check is removed.
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  algorithmProblems,
  certificateAlgorithmProblems,
  chainAlgorithmProblems,
  essProblem,
  sealCertificateProblems,
  signerInfoAlgorithmProblems,
  timestampingCertificateProblems,
  validatePath,
} from '../../src/evidence/certificate-policy.js';
import { contentInfoDer, signCms } from '../../src/evidence/cms.js';
import { readSignedData } from '../../src/evidence/cms-read.js';
import {
  certificateDer,
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  OID,
  parseCertificates,
  type SigningIdentity,
} from '../../src/evidence/pki.js';

// ---------------------------------------------------------------------------------------------------------------
// A certificate builder that can get everything wrong

type Keys = { privateKey: KeyObject; publicKey: KeyObject };
const rsaKeys = (modulusLength: number): Keys => generateKeyPairSync('rsa', { modulusLength });
const ecKeys = (namedCurve: string): Keys => generateKeyPairSync('ec', { namedCurve });

const KU = { digitalSignature: 0, nonRepudiation: 1, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;
const EKU = {
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  emailProtection: '1.3.6.1.5.5.7.3.4',
  timeStamping: '1.3.6.1.5.5.7.3.8',
  documentSigning: '1.3.6.1.5.5.7.3.36',
  adobe: '1.2.840.113583.1.1.5',
  msDocumentSigning: '1.3.6.1.4.1.311.10.3.12',
  any: '2.5.29.37.0',
} as const;
const SHA256 = '2.16.840.1.101.3.4.2.1';
const SHA1 = '1.3.14.3.2.26';
const SHA512 = '2.16.840.1.101.3.4.2.3';

interface Issuer {
  cert: pkijs.Certificate;
  keys: Keys;
}

interface Spec {
  cn: string;
  keys: Keys;
  /** Absent: self-signed. */
  issuer?: Issuer;
  /** basicConstraints cA=TRUE (critical). */
  ca?: boolean;
  pathLen?: number;
  /** For a non-CA: basicConstraints present with cA FALSE (default: absent). */
  caFalse?: boolean;
  /** Bits set; null: no keyUsage extension. Default: keyCertSign+cRLSign for a CA, digitalSignature+nonRepudiation otherwise. */
  keyUsage?: number[] | null;
  /** Purposes; null: no extKeyUsage. Default: Adobe Authentic Documents for a non-CA, none for a CA. */
  eku?: string[] | null;
  ekuCritical?: boolean;
  from?: string;
  to?: string;
  hash?: 'sha256' | 'sha1' | 'md5';
  /** false: no subject/authority key identifiers (so path building has to try the signature). */
  keyIds?: boolean;
  extra?: pkijs.Extension[];
  /** Changes the certificate after signing (the signature stays the one over the original signed part). */
  tamper?: (cert: pkijs.Certificate) => void;
}

const name = (cn: string) =>
  new pkijs.RelativeDistinguishedNames({
    typesAndValues: [new pkijs.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: cn }) })],
  });
const extension = (extnID: string, critical: boolean, value: asn1js.AsnType) =>
  new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });
const keyUsageBits = (bits: number[]) => {
  const top = Math.max(...bits);
  const bytes = new Uint8Array(top >= 8 ? 2 : 1);
  for (const b of bits) bytes[b >> 3]! |= 0x80 >> (b & 7);
  return new asn1js.BitString({ valueHex: bytes, unusedBits: bytes.length * 8 - 1 - top });
};
const spki = (key: KeyObject) => pkijs.PublicKeyInfo.fromBER(key.export({ type: 'spki', format: 'der' }));
const keyId = (key: KeyObject) => createHash('sha1').update(spki(key).subjectPublicKey.valueBlock.valueHexView).digest();
const unknownCritical = (critical = true) => extension('1.3.6.1.4.1.99999.1', critical, new asn1js.Utf8String({ value: 'understand me' }));

function signatureAlgorithm(keys: Keys, hash: 'sha256' | 'sha1' | 'md5'): pkijs.AlgorithmIdentifier {
  if (keys.privateKey.asymmetricKeyType === 'ec') {
    return new pkijs.AlgorithmIdentifier({ algorithmId: hash === 'sha1' ? '1.2.840.10045.4.1' : '1.2.840.10045.4.3.2' });
  }
  const oid = { sha256: '1.2.840.113549.1.1.11', sha1: '1.2.840.113549.1.1.5', md5: '1.2.840.113549.1.1.4' }[hash];
  return new pkijs.AlgorithmIdentifier({ algorithmId: oid, algorithmParams: new asn1js.Null() });
}

let serial = 1;
function makeCert(spec: Spec): pkijs.Certificate {
  const signer = spec.issuer?.keys ?? spec.keys;
  const hash = spec.hash ?? 'sha256';
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ value: serial++ });
  cert.subject = name(spec.cn);
  cert.issuer = spec.issuer ? spec.issuer.cert.subject : name(spec.cn);
  cert.notBefore = new pkijs.Time({ type: pkijs.TimeType.UTCTime, value: new Date(spec.from ?? '2020-01-01T00:00:00Z') });
  cert.notAfter = new pkijs.Time({ type: pkijs.TimeType.UTCTime, value: new Date(spec.to ?? '2040-01-01T00:00:00Z') });
  cert.subjectPublicKeyInfo = spki(spec.keys.publicKey);
  const extensions: pkijs.Extension[] = [];
  if (spec.ca || spec.caFalse) {
    const bc = new pkijs.BasicConstraints(
      spec.ca ? { cA: true, ...(spec.pathLen !== undefined ? { pathLenConstraint: spec.pathLen } : {}) } : {},
    );
    extensions.push(extension('2.5.29.19', true, bc.toSchema()));
  }
  const ku =
    spec.keyUsage === undefined ? (spec.ca ? [KU.keyCertSign, KU.cRLSign] : [KU.digitalSignature, KU.nonRepudiation]) : spec.keyUsage;
  if (ku) extensions.push(extension('2.5.29.15', true, keyUsageBits(ku)));
  const eku = spec.eku === undefined ? (spec.ca ? null : [EKU.adobe]) : spec.eku;
  if (eku) extensions.push(extension('2.5.29.37', spec.ekuCritical ?? false, new pkijs.ExtKeyUsage({ keyPurposes: eku }).toSchema()));
  if (spec.keyIds !== false) {
    extensions.push(extension('2.5.29.14', false, new asn1js.OctetString({ valueHex: keyId(spec.keys.publicKey) })));
    if (spec.issuer) {
      const aki = new pkijs.AuthorityKeyIdentifier({
        keyIdentifier: new asn1js.OctetString({ valueHex: keyId(spec.issuer.keys.publicKey) }),
      });
      extensions.push(extension('2.5.29.35', false, aki.toSchema()));
    }
  }
  extensions.push(...(spec.extra ?? []));
  cert.extensions = extensions;
  cert.signature = signatureAlgorithm(signer, hash);
  cert.signatureAlgorithm = signatureAlgorithm(signer, hash);
  const tbs = new Uint8Array(cert.encodeTBS().toBER(false));
  cert.tbsView = tbs;
  cert.signatureValue = new asn1js.BitString({ valueHex: sign(hash, tbs, signer.privateKey) });
  spec.tamper?.(cert);
  // As a validator meets it: parsed from DER.
  return pkijs.Certificate.fromBER(cert.toSchema().toBER(false));
}

const AT = new Date('2025-06-01T00:00:00Z');

let rootKeys: Keys;
let otherKeys: Keys;
let interKeys: Keys;
let inter2Keys: Keys;
let leafKeys: Keys;
let rsa1024: Keys;
let rsa512: Keys;
let p256: Keys;
let p384: Keys;
let k1: Keys;
let root: pkijs.Certificate;
let R: Issuer;

// The sandbox's own profile: RSA-3072, a root, a seal and a TSA, as src/evidence/pki.ts makes them.
let sandboxRoot: pkijs.Certificate;
let sandboxSeal: SigningIdentity;
let sandboxTsa: SigningIdentity;

beforeAll(async () => {
  [rootKeys, otherKeys, interKeys, inter2Keys, leafKeys] = [0, 1, 2, 3, 4].map(() => rsaKeys(2048)) as [Keys, Keys, Keys, Keys, Keys];
  rsa1024 = rsaKeys(1024);
  rsa512 = rsaKeys(512);
  p256 = ecKeys('prime256v1');
  p384 = ecKeys('secp384r1');
  k1 = ecKeys('secp256k1');
  root = makeCert({ cn: 'Test root', keys: rootKeys, ca: true });
  R = { cert: root, keys: rootKeys };

  const ca = await createCertificateAuthority({ CN: 'Policy test root CA', O: 'esign sandbox' });
  const seal = await issueSigningCertificate(ca, { CN: 'Policy test seal' });
  const tsa = await issueSigningCertificate(ca, { CN: 'Policy test TSA' }, new Date(), 3, 'time-stamping');
  sandboxRoot = parseCertificates(ca.certificate)[0]!;
  sandboxSeal = await loadSigningIdentity(seal, [ca.certificate]);
  sandboxTsa = await loadSigningIdentity(tsa, [ca.certificate]);
});

const problemOf = (result: { chain: pkijs.Certificate[] } | { problem: string }) => ('problem' in result ? result.problem : undefined);
const subjects = (result: { chain: pkijs.Certificate[] } | { problem: string }) =>
  'chain' in result ? result.chain.map((c) => (c.subject.typesAndValues[0]!.value.valueBlock as { value: string }).value) : result.problem;

/** root → intermediate (its options) → leaf. */
function viaIntermediate(intermediate: Partial<Spec> = {}, leaf: Partial<Spec> = {}) {
  const inter = makeCert({ cn: 'Intermediate', keys: interKeys, issuer: R, ca: true, ...intermediate });
  const end = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: inter, keys: interKeys }, ...leaf });
  return { inter, leaf: end };
}

// ---------------------------------------------------------------------------------------------------------------

describe('validatePath', () => {
  it('chains a leaf to the anchor that issued it, and through an intermediate the signature carries', async () => {
    const direct = makeCert({ cn: 'Seal', keys: leafKeys, issuer: R });
    expect(subjects(await validatePath(direct, [], [root], AT))).toEqual(['Seal', 'Test root']);

    const { inter, leaf } = viaIntermediate();
    const stranger = makeCert({ cn: 'Stranger', keys: otherKeys, ca: true });
    // Order and strangers in the pool do not matter; the anchor carried in the pool is still the anchor.
    expect(subjects(await validatePath(leaf, [stranger, root, inter], [root], AT))).toEqual(['Seal', 'Intermediate', 'Test root']);
    // Without the intermediate there is no path.
    expect(problemOf(await validatePath(leaf, [], [root], AT))).toMatch(/issued "CN=Seal"/);
  });

  it('verifies ECDSA signatures (a P-256 intermediate)', async () => {
    const inter = makeCert({ cn: 'EC intermediate', keys: p256, issuer: R, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: inter, keys: p256 } });
    expect(subjects(await validatePath(leaf, [inter], [root], AT))).toEqual(['Seal', 'EC intermediate', 'Test root']);
  });

  it('refuses a leaf no anchor issued', async () => {
    const other = makeCert({ cn: 'Other root', keys: otherKeys, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: other, keys: otherKeys } });
    expect(problemOf(await validatePath(leaf, [other], [root], AT))).toMatch(
      /the path ends at "CN=Other root": no other certificate .* issued it/,
    );
    expect(problemOf(await validatePath(leaf, [], [root], AT))).toMatch(
      /no certificate the signature carries, nor any trust anchor, issued "CN=Seal"/,
    );
  });

  it('refuses a certificate that names the anchor as its issuer but was signed by another key', async () => {
    const impostor = makeCert({ cn: 'Test root', keys: otherKeys, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: impostor, keys: otherKeys }, keyIds: false });
    expect(problemOf(await validatePath(leaf, [], [root], AT))).toMatch(/"CN=Seal" is not signed by the key of "CN=Test root"/);
  });

  it('refuses a leaf used as a CA: no basicConstraints, or cA FALSE', async () => {
    // A seal certificate the root issued signs a second "seal" certificate with its own key.
    const asIssuer = makeCert({ cn: 'Real seal', keys: interKeys, issuer: R });
    const forged = makeCert({ cn: 'Forged seal', keys: leafKeys, issuer: { cert: asIssuer, keys: interKeys } });
    expect(problemOf(await validatePath(forged, [asIssuer], [root], AT))).toMatch(/"CN=Real seal" cannot issue .*no basicConstraints/);

    const caFalse = makeCert({ cn: 'Real seal', keys: interKeys, issuer: R, caFalse: true });
    const forged2 = makeCert({ cn: 'Forged seal', keys: leafKeys, issuer: { cert: caFalse, keys: interKeys } });
    expect(problemOf(await validatePath(forged2, [caFalse], [root], AT))).toMatch(/cA is not TRUE/);
  });

  it('refuses an intermediate whose keyUsage lacks keyCertSign; keyUsage left out is fine', async () => {
    const noCertSign = viaIntermediate({ keyUsage: [KU.digitalSignature, KU.cRLSign] });
    expect(problemOf(await validatePath(noCertSign.leaf, [noCertSign.inter], [root], AT))).toMatch(/does not include keyCertSign/);
    const noKeyUsage = viaIntermediate({ keyUsage: null });
    expect(subjects(await validatePath(noKeyUsage.leaf, [noKeyUsage.inter], [root], AT))).toHaveLength(3);
  });

  it('honours pathLenConstraint: 0 on an intermediate that issues an intermediate', async () => {
    const build = (pathLen: number) => {
      const i1 = makeCert({ cn: 'Intermediate 1', keys: interKeys, issuer: R, ca: true, pathLen });
      const i2 = makeCert({ cn: 'Intermediate 2', keys: inter2Keys, issuer: { cert: i1, keys: interKeys }, ca: true });
      const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: i2, keys: inter2Keys } });
      return { leaf, pool: [i1, i2] };
    };
    const violated = build(0);
    expect(problemOf(await validatePath(violated.leaf, violated.pool, [root], AT))).toMatch(
      /"CN=Intermediate 1" cannot issue "CN=Intermediate 2": its pathLenConstraint 0 allows 0 .* the path has 1/,
    );
    const allowed = build(1);
    expect(subjects(await validatePath(allowed.leaf, allowed.pool, [root], AT))).toEqual([
      'Seal',
      'Intermediate 2',
      'Intermediate 1',
      'Test root',
    ]);
  });

  it("honours the anchor's own pathLenConstraint (the sandbox root's is 0)", async () => {
    const root0 = makeCert({ cn: 'Root 0', keys: rootKeys, ca: true, pathLen: 0 });
    const inter = makeCert({ cn: 'Intermediate', keys: interKeys, issuer: { cert: root0, keys: rootKeys }, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: inter, keys: interKeys } });
    expect(problemOf(await validatePath(leaf, [inter], [root0], AT))).toMatch(
      /trust anchor "CN=Root 0" cannot issue .*pathLenConstraint 0/,
    );
    const direct = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: root0, keys: rootKeys } });
    expect(subjects(await validatePath(direct, [], [root0], AT))).toEqual(['Seal', 'Root 0']);
  });

  it('does not count a self-issued certificate (a key rollover) against pathLenConstraint (RFC 5280 6.1.4 (l))', async () => {
    const root0 = makeCert({ cn: 'Root 0', keys: rootKeys, ca: true, pathLen: 0 });
    // The root's new key, certified by its old one: same name, another key.
    const rollover = makeCert({ cn: 'Root 0', keys: interKeys, issuer: { cert: root0, keys: rootKeys }, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: rollover, keys: interKeys } });
    expect(subjects(await validatePath(leaf, [rollover], [root0], AT))).toEqual(['Seal', 'Root 0', 'Root 0']);
  });

  it('refuses an expired intermediate, and finds its valid renewal beside it', async () => {
    const expired = makeCert({ cn: 'Intermediate', keys: interKeys, issuer: R, ca: true, to: '2024-01-01T00:00:00Z' });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: expired, keys: interKeys } });
    expect(problemOf(await validatePath(leaf, [expired], [root], AT))).toMatch(
      /"CN=Intermediate" cannot issue "CN=Seal": it is valid from .* to 2024-01-01T00:00:00.000Z, not at 2025-06-01/,
    );
    // pkijs takes the first shortest path and fails with it; the search goes on to the renewal (same name, same key).
    const renewed = makeCert({ cn: 'Intermediate', keys: interKeys, issuer: R, ca: true });
    expect(subjects(await validatePath(leaf, [expired, renewed], [root], AT))).toEqual(['Seal', 'Intermediate', 'Test root']);
  });

  it("judges the anchor's and the leaf's dates too", async () => {
    const shortRoot = makeCert({ cn: 'Short root', keys: rootKeys, ca: true, to: '2025-01-01T00:00:00Z' });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: shortRoot, keys: rootKeys } });
    expect(problemOf(await validatePath(leaf, [], [shortRoot], AT))).toMatch(
      /trust anchor "CN=Short root" cannot issue "CN=Seal": it is valid from/,
    );
    expect(subjects(await validatePath(leaf, [], [shortRoot], new Date('2024-06-01T00:00:00Z')))).toHaveLength(2);

    const future = makeCert({ cn: 'Seal', keys: leafKeys, issuer: R, from: '2026-01-01T00:00:00Z' });
    expect(problemOf(await validatePath(future, [], [root], AT))).toMatch(/the certificate "CN=Seal": it is valid from 2026-01-01/);
  });

  it('refuses an unknown critical extension on the leaf or an intermediate; the same one not critical is ignored', async () => {
    const leafCritical = makeCert({ cn: 'Seal', keys: leafKeys, issuer: R, extra: [unknownCritical()] });
    expect(problemOf(await validatePath(leafCritical, [], [root], AT))).toMatch(/critical extension .*\(1\.3\.6\.1\.4\.1\.99999\.1\)/);
    const interCritical = viaIntermediate({ extra: [unknownCritical()] });
    expect(problemOf(await validatePath(interCritical.leaf, [interCritical.inter], [root], AT))).toMatch(
      /"CN=Intermediate" cannot issue "CN=Seal": it carries a critical extension/,
    );
    const nonCritical = viaIntermediate({ extra: [unknownCritical(false)] }, { extra: [unknownCritical(false)] });
    expect(subjects(await validatePath(nonCritical.leaf, [nonCritical.inter], [root], AT))).toHaveLength(3);
  });

  it('refuses a certificate with an extension twice (RFC 5280 4.2)', async () => {
    const twice = makeCert({
      cn: 'Seal',
      keys: leafKeys,
      issuer: R,
      extra: [extension('2.5.29.15', true, keyUsageBits([KU.keyEncipherment]))],
    });
    expect(problemOf(await validatePath(twice, [], [root], AT))).toMatch(/extension 2\.5\.29\.15 more than once/);
  });

  it('refuses a certificate whose unsigned signature algorithm differs from the signed one (RFC 5280 4.1.1.2)', async () => {
    // The outer field without its NULL parameters: the signature still verifies, the two fields differ.
    const leaf = makeCert({
      cn: 'Seal',
      keys: leafKeys,
      issuer: R,
      tamper: (c) => (c.signatureAlgorithm = new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.113549.1.1.11' })),
    });
    expect(problemOf(await validatePath(leaf, [], [root], AT))).toMatch(/signed and unsigned signature algorithm fields differ/);
  });

  it('ends on a loop of cross-signed CAs (pkijs does not: its search never returns)', async () => {
    const aKeys = interKeys;
    const bKeys = inter2Keys;
    const aSelf = makeCert({ cn: 'A', keys: aKeys, ca: true });
    const bSelf = makeCert({ cn: 'B', keys: bKeys, ca: true });
    const aByB = makeCert({ cn: 'A', keys: aKeys, ca: true, issuer: { cert: bSelf, keys: bKeys }, keyIds: false });
    const bByA = makeCert({ cn: 'B', keys: bKeys, ca: true, issuer: { cert: aSelf, keys: aKeys }, keyIds: false });
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: aSelf, keys: aKeys }, keyIds: false });
    const started = Date.now();
    // A → B → A is where the path ends: A is never taken twice (without that, only the length limit would end it).
    expect(problemOf(await validatePath(leaf, [aByB, bByA, aSelf, bSelf], [root], AT))).toMatch(/the path ends at "CN=A"/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up after 64 candidate issuers, whatever the signature carries', async () => {
    // Decoys with the leaf's issuer name and another key: each costs a signature verification.
    const decoys = Array.from({ length: 70 }, () => makeCert({ cn: 'Intermediate', keys: otherKeys, issuer: R, ca: true }));
    const leaf = makeCert({ cn: 'Seal', keys: leafKeys, issuer: { cert: decoys[0]!, keys: interKeys }, keyIds: false });
    expect(problemOf(await validatePath(leaf, decoys, [root], AT))).toMatch(/more than 64 candidate issuers/);
  });

  it('accepts a chain of 8 certificates and refuses one of 9', async () => {
    const chainOf = (length: number) => {
      const pool: pkijs.Certificate[] = [];
      let issuer: Issuer = R;
      for (let i = 1; i <= length - 2; i++) {
        const keys = i % 2 ? interKeys : inter2Keys;
        const cert = makeCert({ cn: `Intermediate ${i}`, keys, issuer, ca: true });
        pool.push(cert);
        issuer = { cert, keys };
      }
      return { leaf: makeCert({ cn: 'Seal', keys: leafKeys, issuer }), pool };
    };
    const eight = chainOf(8);
    expect(subjects(await validatePath(eight.leaf, eight.pool, [root], AT))).toHaveLength(8);
    const nine = chainOf(9);
    expect(problemOf(await validatePath(nine.leaf, nine.pool, [root], AT))).toMatch(/within 8 certificates/);
  });

  it('takes a leaf that is itself an anchor as a chain of one', async () => {
    const selfSigned = makeCert({ cn: 'Pinned seal', keys: leafKeys });
    expect(subjects(await validatePath(selfSigned, [], [root, selfSigned], AT))).toEqual(['Pinned seal']);
    expect(problemOf(await validatePath(selfSigned, [], [root], AT))).toBeDefined();
  });

  it("validates the sandbox's seal and TSA chains", async () => {
    const now = new Date();
    for (const identity of [sandboxSeal, sandboxTsa]) {
      const result = await validatePath(identity.certificate, identity.chain, [sandboxRoot], now);
      expect(problemOf(result)).toBeUndefined();
      expect('chain' in result && result.chain).toEqual([identity.certificate, sandboxRoot]);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('sealCertificateProblems', () => {
  const leaf = (spec: Partial<Spec>) => makeCert({ cn: 'Seal', keys: leafKeys, issuer: R, ...spec });

  it("accepts the sandbox's seal, every document-signing purpose, and no extKeyUsage at all", () => {
    expect(sealCertificateProblems(sandboxSeal.certificate)).toEqual([]);
    for (const purpose of [EKU.documentSigning, EKU.adobe, EKU.emailProtection, EKU.msDocumentSigning, EKU.any]) {
      expect(sealCertificateProblems(leaf({ eku: [EKU.clientAuth, purpose] }))).toEqual([]);
    }
    expect(sealCertificateProblems(leaf({ eku: null }))).toEqual([]);
    expect(sealCertificateProblems(leaf({ keyUsage: [KU.nonRepudiation] }))).toEqual([]);
  });

  it('refuses a TLS server certificate (keyEncipherment, serverAuth)', () => {
    const problems = sealCertificateProblems(leaf({ keyUsage: [KU.keyEncipherment], eku: [EKU.serverAuth] }));
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/keyUsage \(keyEncipherment\) has neither digitalSignature nor nonRepudiation/);
    expect(problems.join('\n')).toMatch(/extendedKeyUsage \(serverAuth\) allows no document signing/);
  });

  it('refuses a TLS certificate with digitalSignature by its purposes alone', () => {
    const problems = sealCertificateProblems(
      leaf({ keyUsage: [KU.digitalSignature, KU.keyEncipherment], eku: [EKU.serverAuth, EKU.clientAuth] }),
    );
    expect(problems).toEqual([expect.stringMatching(/extendedKeyUsage \(serverAuth, clientAuth\) allows no document signing/)]);
  });

  it('refuses a document-signing certificate whose key is for encipherment only, or that has no keyUsage', () => {
    expect(sealCertificateProblems(leaf({ keyUsage: [KU.keyEncipherment] }))).toEqual([
      expect.stringMatching(/keyUsage \(keyEncipherment\) has neither/),
    ]);
    expect(sealCertificateProblems(leaf({ keyUsage: null }))).toEqual([expect.stringMatching(/no keyUsage extension/)]);
  });

  it("refuses a time-stamping authority's certificate", () => {
    expect(sealCertificateProblems(sandboxTsa.certificate)).toEqual([expect.stringMatching(/extendedKeyUsage \(timeStamping\)/)]);
  });

  it('refuses a CA certificate, even with digitalSignature', () => {
    const ca = makeCert({
      cn: 'CA',
      keys: interKeys,
      issuer: R,
      ca: true,
      keyUsage: [KU.digitalSignature, KU.keyCertSign],
      eku: [EKU.adobe],
    });
    expect(sealCertificateProblems(ca)).toEqual([expect.stringMatching(/it is a CA certificate/)]);
  });

  it('refuses malformed keyUsage, extKeyUsage and basicConstraints extensions', () => {
    const garbage = (oid: string) => extension(oid, true, new asn1js.Utf8String({ value: 'not this' }));
    expect(sealCertificateProblems(leaf({ keyUsage: null, extra: [garbage('2.5.29.15')] }))).toEqual([
      expect.stringMatching(/keyUsage extension is malformed/),
    ]);
    expect(sealCertificateProblems(leaf({ eku: null, extra: [garbage('2.5.29.37')] }))).toEqual([
      expect.stringMatching(/extendedKeyUsage extension is malformed/),
    ]);
    expect(sealCertificateProblems(leaf({ extra: [garbage('2.5.29.19')] }))).toEqual([
      expect.stringMatching(/basicConstraints extension is malformed/),
    ]);
  });

  it('refuses a keyUsage extension given twice', () => {
    const twice = leaf({ extra: [extension('2.5.29.15', true, keyUsageBits([KU.digitalSignature]))] });
    expect(sealCertificateProblems(twice)).toEqual([expect.stringMatching(/2\.5\.29\.15 2 times/)]);
  });
});

describe('timestampingCertificateProblems', () => {
  const tsa = (spec: Partial<Spec>) =>
    makeCert({ cn: 'TSA', keys: leafKeys, issuer: R, eku: [EKU.timeStamping], ekuCritical: true, ...spec });

  it("accepts the sandbox's TSA, with or without keyUsage", () => {
    expect(timestampingCertificateProblems(sandboxTsa.certificate)).toEqual([]);
    expect(timestampingCertificateProblems(tsa({}))).toEqual([]);
    expect(timestampingCertificateProblems(tsa({ keyUsage: null }))).toEqual([]);
  });

  it('refuses a certificate without extKeyUsage, or with it not critical, or with another purpose beside timeStamping', () => {
    expect(timestampingCertificateProblems(tsa({ eku: null }))).toEqual([expect.stringMatching(/no extendedKeyUsage/)]);
    expect(timestampingCertificateProblems(tsa({ ekuCritical: false }))).toEqual([expect.stringMatching(/not critical/)]);
    expect(timestampingCertificateProblems(tsa({ eku: [EKU.timeStamping, EKU.serverAuth] }))).toEqual([
      expect.stringMatching(/\(timeStamping, serverAuth\) is not timeStamping alone/),
    ]);
    expect(timestampingCertificateProblems(sandboxSeal.certificate)).toEqual([
      expect.stringMatching(/Adobe Authentic Documents\) is not timeStamping alone/),
      expect.stringMatching(/not critical/),
    ]);
  });

  it('refuses a key for encipherment only, and a CA', () => {
    expect(timestampingCertificateProblems(tsa({ keyUsage: [KU.keyEncipherment] }))).toEqual([
      expect.stringMatching(/neither digitalSignature/),
    ]);
    expect(timestampingCertificateProblems(tsa({ ca: true, keyUsage: [KU.digitalSignature, KU.keyCertSign] }))).toEqual([
      expect.stringMatching(/CA certificate/),
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('algorithmProblems', () => {
  const key = (keys: Keys) => spki(keys.publicKey);
  const judge = (signatureAlgorithmOid: string, keys: Keys, at: string, extra: { digestOid?: string; signatureParams?: unknown } = {}) =>
    algorithmProblems('the test signature', { signatureAlgorithmOid, publicKey: key(keys), ...extra }, new Date(at));

  it('accepts SHA-256 with RSA-2048, RSA-3072 and ECDSA on P-256 and P-384', () => {
    expect(judge('1.2.840.113549.1.1.11', leafKeys, '2026-01-01')).toEqual([]);
    expect(judge('1.2.840.10045.4.3.2', p256, '2026-01-01')).toEqual([]);
    expect(judge('1.2.840.10045.4.3.3', p384, '2026-01-01')).toEqual([]);
    expect(certificateAlgorithmProblems(sandboxSeal.certificate, sandboxRoot, new Date())).toEqual([]);
  });

  it('refuses SHA-1 from 2016-01-01 on, in the algorithm or as the separate digest', () => {
    expect(judge('1.2.840.113549.1.1.5', leafKeys, '2015-12-31T23:59:59Z')).toEqual([]);
    expect(judge('1.2.840.113549.1.1.5', leafKeys, '2016-01-01T00:00:00Z')).toEqual([
      expect.stringMatching(/^the test signature: SHA-1 .* from 2016-01-01/),
    ]);
    expect(judge('1.2.840.113549.1.1.1', leafKeys, '2020-01-01', { digestOid: SHA1 })).toEqual([expect.stringMatching(/SHA-1/)]);
    expect(judge('1.2.840.113549.1.1.1', leafKeys, '2020-01-01', { digestOid: SHA256 })).toEqual([]);
    expect(judge('1.2.840.113549.1.1.11', leafKeys, '2020-01-01', { digestOid: SHA1 })).toEqual([expect.stringMatching(/SHA-1/)]);
    expect(judge('1.2.840.10045.4.1', p256, '2020-01-01')).toEqual([expect.stringMatching(/SHA-1/)]);
  });

  it('refuses MD5, and rsaEncryption that names no digest', () => {
    expect(judge('1.2.840.113549.1.1.4', leafKeys, '2010-01-01')).toEqual([expect.stringMatching(/MD5 .* from 2005-01-01/)]);
    expect(judge('1.2.840.113549.1.1.1', leafKeys, '2020-01-01')).toEqual([expect.stringMatching(/names no digest algorithm/)]);
  });

  it('refuses RSA keys under 2048 bits from 2019-01-01 on, and under 1024 always', () => {
    expect(judge('1.2.840.113549.1.1.11', rsa1024, '2018-12-31T23:59:59Z')).toEqual([]);
    expect(judge('1.2.840.113549.1.1.11', rsa1024, '2019-01-01T00:00:00Z')).toEqual([
      expect.stringMatching(/RSA key has 1024 bits; from 2019-01-01/),
    ]);
    expect(judge('1.2.840.113549.1.1.11', rsa512, '2005-01-01')).toEqual([expect.stringMatching(/512 bits, fewer than 1024/)]);
  });

  it('refuses EC keys on curves other than P-256, P-384 and P-521', () => {
    expect(judge('1.2.840.10045.4.3.2', k1, '2026-01-01')).toEqual([expect.stringMatching(/EC key is on secp256k1/)]);
  });

  it('refuses unknown algorithms, and a key of the wrong type', () => {
    expect(judge('1.2.3.4', leafKeys, '2026-01-01')).toEqual([expect.stringMatching(/signature algorithm 1\.2\.3\.4 is not one/)]);
    expect(judge('1.2.840.10040.4.3', leafKeys, '2000-01-01')).toEqual([expect.stringMatching(/not one this validator accepts/)]); // DSA with SHA-1
    expect(judge('1.2.840.113549.1.1.1', leafKeys, '2026-01-01', { digestOid: '1.2.3.5' })).toEqual([
      expect.stringMatching(/digest algorithm 1\.2\.3\.5/),
    ]);
    expect(judge('1.2.840.113549.1.1.11', p256, '2026-01-01')).toEqual([expect.stringMatching(/needs an RSA key, and the key is ec/)]);
    expect(judge('1.2.840.10045.4.3.2', leafKeys, '2026-01-01')).toEqual([expect.stringMatching(/needs an EC key, and the key is rsa/)]);
  });

  it('reads the digests of RSASSA-PSS from its parameters', () => {
    const pss = (hash: string | undefined) => {
      const params = hash
        ? new pkijs.RSASSAPSSParams({
            hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: hash }),
            maskGenAlgorithm: new pkijs.AlgorithmIdentifier({
              algorithmId: '1.2.840.113549.1.1.8',
              algorithmParams: new pkijs.AlgorithmIdentifier({ algorithmId: hash }).toSchema(),
            }),
            saltLength: 32,
          }).toSchema()
        : new asn1js.Sequence(); // every field left out: SHA-1 (RFC 4055 3.1)
      return asn1js.fromBER(params.toBER(false)).result;
    };
    expect(judge('1.2.840.113549.1.1.10', leafKeys, '2026-01-01', { signatureParams: pss(SHA256) })).toEqual([]);
    expect(judge('1.2.840.113549.1.1.10', leafKeys, '2020-01-01', { signatureParams: pss(undefined) })).toEqual([
      expect.stringMatching(/SHA-1/),
    ]);
    expect(judge('1.2.840.113549.1.1.10', leafKeys, '2026-01-01')).toEqual([
      expect.stringMatching(/RSASSA-PSS parameters cannot be read \(its parameters are missing\)/),
    ]);
  });

  it("judges a CMS signer's digest and signature algorithms", async () => {
    const signed = await signCms(sandboxSeal, { type: OID.data, digest: createHash('sha256').update('x').digest() }, [
      sandboxSeal.certificate,
    ]);
    const signerInfo = signed.signerInfos[0]!;
    expect(signerInfoAlgorithmProblems('the seal', signerInfo, sandboxSeal.certificate, new Date())).toEqual([]);
    signerInfo.digestAlgorithm = new pkijs.AlgorithmIdentifier({ algorithmId: SHA1 });
    expect(signerInfoAlgorithmProblems('the seal', signerInfo, sandboxSeal.certificate, new Date())).toEqual([
      expect.stringMatching(/^the seal: SHA-1/),
    ]);
  });
});

describe('certificateAlgorithmProblems', () => {
  it("refuses a certificate signed with SHA-1 after 2016, by its issuer's signature", () => {
    const sha1 = makeCert({ cn: 'Seal', keys: leafKeys, issuer: R, hash: 'sha1' });
    expect(certificateAlgorithmProblems(sha1, root, new Date('2020-01-01'))).toEqual([
      expect.stringMatching(/^the signature on "CN=Seal": SHA-1/),
    ]);
    expect(certificateAlgorithmProblems(sha1, root, new Date('2015-01-01'))).toEqual([]);
  });

  it("judges the issuer's key for the signature, and the certificate's own key", () => {
    const weakRoot = makeCert({ cn: 'Weak root', keys: rsa1024, ca: true });
    const leaf = makeCert({ cn: 'Seal', keys: k1, issuer: { cert: weakRoot, keys: rsa1024 } });
    const problems = certificateAlgorithmProblems(leaf, weakRoot, new Date('2020-01-01'));
    expect(problems).toEqual([
      expect.stringMatching(/^the signature on "CN=Seal": its RSA key has 1024 bits/),
      expect.stringMatching(/^the key of "CN=Seal": its EC key is on secp256k1/),
    ]);
  });

  it('refuses a key that is neither RSA nor EC (Ed25519)', () => {
    const ed = makeCert({ cn: 'Seal', keys: generateKeyPairSync('ed25519'), issuer: R });
    expect(certificateAlgorithmProblems(ed, root, AT)).toEqual([
      expect.stringMatching(/^the key of "CN=Seal": its ed25519 key is not RSA or EC/),
    ]);
  });

  it("skips a self-signed anchor's own signature, not its key", () => {
    const sha1Root = makeCert({ cn: 'Old root', keys: rootKeys, ca: true, hash: 'sha1' });
    expect(certificateAlgorithmProblems(sha1Root, undefined, new Date('2020-01-01'))).toEqual([]);
    expect(certificateAlgorithmProblems(sha1Root, sha1Root, new Date('2020-01-01'))).toEqual([expect.stringMatching(/SHA-1/)]);
    const weakRoot = makeCert({ cn: 'Weak root', keys: rsa1024, ca: true });
    expect(certificateAlgorithmProblems(weakRoot, undefined, new Date('2020-01-01'))).toEqual([
      expect.stringMatching(/^the key of "CN=Weak root"/),
    ]);
  });

  it('judges a whole chain, the anchor last', async () => {
    const sha1Root = makeCert({ cn: 'Old root', keys: rootKeys, ca: true, hash: 'sha1' });
    const { inter, leaf } = viaIntermediate({ issuer: { cert: sha1Root, keys: rootKeys }, hash: 'sha1' });
    const result = await validatePath(leaf, [inter], [sha1Root], AT);
    expect('chain' in result).toBe(true);
    expect(chainAlgorithmProblems((result as { chain: pkijs.Certificate[] }).chain, AT)).toEqual([
      expect.stringMatching(/^the signature on "CN=Intermediate": SHA-1/),
    ]);
    expect(chainAlgorithmProblems([sandboxSeal.certificate, sandboxRoot], new Date())).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('essProblem', () => {
  const digest = createHash('sha256').update('the signed bytes').digest();
  const other = () => makeCert({ cn: 'Policy test seal', keys: leafKeys, issuer: R });

  /** An ESSCertID(v2) for `cert`: `hash` over its DER (default SHA-256 for v2, SHA-1 for v1). */
  function certId(
    cert: pkijs.Certificate,
    options: {
      v1?: boolean;
      hash?: 'sha256' | 'sha512' | 'sha1';
      algorithm?: string;
      issuer?: pkijs.RelativeDistinguishedNames;
      serial?: asn1js.Integer;
      issuerSerial?: boolean;
    } = {},
  ): asn1js.Sequence {
    const hash = options.hash ?? (options.v1 ? 'sha1' : 'sha256');
    const items: asn1js.AsnType[] = [];
    if (options.algorithm) items.push(new pkijs.AlgorithmIdentifier({ algorithmId: options.algorithm }).toSchema());
    items.push(new asn1js.OctetString({ valueHex: createHash(hash).update(certificateDer(cert)).digest() }));
    if (options.issuerSerial !== false) {
      const issuer = new pkijs.GeneralNames({ names: [new pkijs.GeneralName({ type: 4, value: options.issuer ?? cert.issuer })] });
      items.push(
        new asn1js.Sequence({
          value: [issuer.toSchema(), options.serial ?? new asn1js.Integer({ valueHex: cert.serialNumber.valueBlock.valueHexView })],
        }),
      );
    }
    return new asn1js.Sequence({ value: items });
  }
  const attribute = (v2: boolean, ids: asn1js.Sequence[], values = 1) =>
    new pkijs.Attribute({
      type: v2 ? '1.2.840.113549.1.9.16.2.47' : '1.2.840.113549.1.9.16.2.12',
      values: Array.from({ length: values }, () => new asn1js.Sequence({ value: [new asn1js.Sequence({ value: ids })] })),
    });
  /** A SignerInfo with these signed attributes (and the two every CMS signature has), as read from DER. */
  function signerInfo(attributes: pkijs.Attribute[]): pkijs.SignerInfo {
    const cert = sandboxSeal.certificate;
    const info = new pkijs.SignerInfo({
      version: 1,
      sid: new pkijs.IssuerAndSerialNumber({ issuer: cert.issuer, serialNumber: cert.serialNumber }),
      digestAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: SHA256 }),
      signedAttrs: new pkijs.SignedAndUnsignedAttributes({
        type: 0,
        attributes: [
          new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.data })] }),
          new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: digest })] }),
          ...attributes,
        ],
      }),
      signatureAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.113549.1.1.11' }),
      signature: new asn1js.OctetString({ valueHex: new Uint8Array(384) }),
    });
    return pkijs.SignerInfo.fromBER(info.toSchema().toBER(false));
  }
  const seal = () => sandboxSeal.certificate;
  const both = (info: pkijs.SignerInfo) => [true, false].map((requireV2) => essProblem(info, seal(), { requireV2 }));

  it('accepts the signing-certificate-v2 our signer writes (src/evidence/cms.ts), as a validator reads it', async () => {
    const signed = await signCms(sandboxSeal, { type: OID.data, digest }, [sandboxSeal.certificate]);
    const read = readSignedData(contentInfoDer(signed));
    expect(both(read.signerInfos[0]!)).toEqual([undefined, undefined]);
    expect(both(signerInfo([attribute(true, [certId(seal())])]))).toEqual([undefined, undefined]);
  });

  it('refuses a signature without the attribute', () => {
    expect(both(signerInfo([]))).toEqual([
      expect.stringMatching(/no signing-certificate-v2/),
      expect.stringMatching(/no signing-certificate-v2/),
    ]);
  });

  it('refuses a v2 attribute over another certificate (a substituted signer certificate)', () => {
    // The same subject name, and no issuerSerial: only the hash tells the certificates apart.
    expect(essProblem(signerInfo([attribute(true, [certId(other(), { issuerSerial: false })])]), seal(), { requireV2: true })).toMatch(
      /identifies another certificate than the signer's "CN=Policy test seal"/,
    );
  });

  it('refuses an issuerSerial with another serial number or another issuer', () => {
    const wrongSerial = certId(seal(), { serial: new asn1js.Integer({ value: 12345 }) });
    expect(essProblem(signerInfo([attribute(true, [wrongSerial])]), seal(), { requireV2: true })).toMatch(/another serial number/);
    const wrongIssuer = certId(seal(), { issuer: root.subject });
    expect(essProblem(signerInfo([attribute(true, [wrongIssuer])]), seal(), { requireV2: true })).toMatch(/names another issuer/);
    expect(
      essProblem(signerInfo([attribute(true, [certId(seal(), { issuerSerial: false })])]), seal(), { requireV2: true }),
    ).toBeUndefined();
  });

  it("judges the same attribute bytes the same way at every check, and refuses a name beside the issuer's DN", () => {
    // pkijs's GeneralName reader retags a dNSName or URI node of the tree it reads: a parse kept between checks read
    // differently the second time, so each signer's attribute is read afresh.
    const names = new pkijs.GeneralNames({
      names: [new pkijs.GeneralName({ type: 4, value: seal().issuer }), new pkijs.GeneralName({ type: 2, value: 'ca.example' })],
    });
    const id = new asn1js.Sequence({
      value: [
        new asn1js.OctetString({ valueHex: createHash('sha256').update(certificateDer(seal())).digest() }),
        new asn1js.Sequence({ value: [names.toSchema(), new asn1js.Integer({ valueHex: seal().serialNumber.valueBlock.valueHexView })] }),
      ],
    });
    const verdicts = [1, 2, 3].map(() => essProblem(signerInfo([attribute(true, [id])]), seal(), { requireV2: true }));
    expect(new Set(verdicts).size).toBe(1);
    // A name beside the issuer's distinguished name is refused, as pyHanko refuses it.
    expect(verdicts[0]).toMatch(/names the issuer otherwise than by its distinguished name alone/);
  });

  it('accepts the SHA-1 signing-certificate only where v2 is not required (a time-stamp token)', () => {
    const v1 = signerInfo([attribute(false, [certId(seal(), { v1: true })])]);
    expect(essProblem(v1, seal(), { requireV2: false })).toBeUndefined();
    expect(essProblem(v1, seal(), { requireV2: true })).toMatch(/only by SHA-1/);
    const v1Other = signerInfo([attribute(false, [certId(other(), { v1: true })])]);
    expect(essProblem(v1Other, seal(), { requireV2: false })).toMatch(/signing-certificate attribute identifies another certificate/);
  });

  it("takes v2's hash algorithm from the attribute: SHA-512 is fine, SHA-1 in v2 is not", () => {
    const sha512 = certId(seal(), { hash: 'sha512', algorithm: SHA512 });
    expect(essProblem(signerInfo([attribute(true, [sha512])]), seal(), { requireV2: true })).toBeUndefined();
    const sha1 = certId(seal(), { hash: 'sha1', algorithm: SHA1 });
    expect(essProblem(signerInfo([attribute(true, [sha1])]), seal(), { requireV2: true })).toMatch(
      /digest this validator does not accept \(SHA-1\)/,
    );
  });

  it('requires the signer to be the first certificate identified', () => {
    const reordered = signerInfo([attribute(true, [certId(other()), certId(seal())])]);
    expect(essProblem(reordered, seal(), { requireV2: true })).toMatch(/another certificate/);
  });

  it('refuses two attributes, two values, or a v1 over another certificate beside a good v2', () => {
    const good = certId(seal());
    expect(essProblem(signerInfo([attribute(true, [good]), attribute(true, [good])]), seal(), { requireV2: true })).toMatch(
      /more than one/,
    );
    expect(essProblem(signerInfo([attribute(true, [good], 2)]), seal(), { requireV2: true })).toMatch(/has 2 values/);
    const mixed = signerInfo([attribute(true, [good]), attribute(false, [certId(other(), { v1: true })])]);
    expect(essProblem(mixed, seal(), { requireV2: false })).toMatch(/signing-certificate attribute identifies another certificate/);
  });

  it('answers a malformed attribute with a problem, never an exception', () => {
    const garbage = new pkijs.Attribute({ type: '1.2.840.113549.1.9.16.2.47', values: [new asn1js.Utf8String({ value: 'not ESS' })] });
    expect(essProblem(signerInfo([garbage]), seal(), { requireV2: true })).toMatch(/cannot be read/);
    const empty = new pkijs.Attribute({
      type: '1.2.840.113549.1.9.16.2.47',
      values: [new asn1js.Sequence({ value: [new asn1js.Sequence()] })],
    });
    expect(essProblem(signerInfo([empty]), seal(), { requireV2: true })).toMatch(/no certificate identifiers/);
  });
});
