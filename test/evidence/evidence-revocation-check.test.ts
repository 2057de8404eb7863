// What revocation data says of a certificate (src/evidence/revocation-check.ts): each rule with the input an
// attacker (or a careless authority) would give it. The PKI is the project's own (createCertificateAuthority,
// issueSigningCertificate); good OCSP responses, "unknown" answers and empty CRLs come from the sandbox's
// RevocationAuthority. What that authority cannot make (a revoked status or CRL entry, a delegated responder, a
// SHA-1 signature, odd extensions) is built here with pkijs and signed with Node's crypto.
import {
  constants,
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  type KeyObject,
} from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  parseCertificates,
  type PemKeyPair,
} from '../../src/evidence/pki.js';
import { RevocationAuthority } from '../../packages/sandbox/src/evidence/revocation.js';
import { MAX_REVOCATION_BYTES, revocationStatus, type RevocationSources } from '../../src/evidence/revocation-check.js';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;
const T0 = new Date('2026-03-01T00:00:00Z');
/** When the signature existed (its time-stamp's genTime). */
const POE = new Date('2026-03-02T10:00:00Z');
/** When it is checked. */
const AT = new Date('2026-03-10T00:00:00Z');
const FRESH = new Date(POE.getTime() + HOUR);

const OID = {
  ocspBasic: '1.3.6.1.5.5.7.48.1.1',
  ocspSigning: '1.3.6.1.5.5.7.3.9',
  sha256Rsa: '1.2.840.113549.1.1.11',
  sha1Rsa: '1.2.840.113549.1.1.5',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  crlDistributionPoints: '2.5.29.31',
  crlNumber: '2.5.29.20',
  deltaCrlIndicator: '2.5.29.27',
  issuingDistributionPoint: '2.5.29.28',
  reasonCode: '2.5.29.21',
  certificateIssuer: '2.5.29.29',
} as const;

interface Party {
  cert: pkijs.Certificate;
  key: KeyObject;
}

let ca: Party;
let sameName: Party; // another CA, with the same name as `ca`
let other: Party; // another CA, by another name
let seal: pkijs.Certificate; // the certificate checked, issued by `ca`
let sibling: pkijs.Certificate; // another certificate by `ca`
let authority: RevocationAuthority;
/** The same CA's service, after the sandbox's "revoke" control: the seal revoked for key compromise. */
let revoking: RevocationAuthority;
let responderKey: KeyObject;
let smallKey: KeyObject;

beforeAll(async () => {
  const name = { CN: 'revocation test CA', O: 'esign test' };
  const caPem = await createCertificateAuthority(name, T0);
  const party = (pem: PemKeyPair): Party => ({ cert: parseCertificates(pem.certificate)[0]!, key: createPrivateKey(pem.privateKey) });
  ca = party(caPem);
  sameName = party(await createCertificateAuthority(name, T0));
  other = party(await createCertificateAuthority({ CN: 'another CA', O: 'elsewhere' }, T0));
  seal = parseCertificates((await issueSigningCertificate(caPem, { CN: 'seal', O: 'esign test' }, T0)).certificate)[0]!;
  sibling = parseCertificates((await issueSigningCertificate(caPem, { CN: 'other seal', O: 'esign test' }, T0)).certificate)[0]!;
  authority = new RevocationAuthority(await loadSigningIdentity(caPem, []));
  revoking = new RevocationAuthority(await loadSigningIdentity(caPem, []));
  revoking.revoke(seal, new Date(POE.getTime() - DAY));
  responderKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  smallKey = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
}, 120_000);

const check = (sources: Partial<RevocationSources>, poe = POE, at = AT, cert = seal, issuer = ca.cert) =>
  revocationStatus(cert, issuer, { ocsps: sources.ocsps ?? [], crls: sources.crls ?? [] }, poe, at);

// --- builders ----------------------------------------------------------------------------------------------------

const algorithm = (hash: 'sha1' | 'sha256') =>
  new pkijs.AlgorithmIdentifier({ algorithmId: hash === 'sha1' ? OID.sha1Rsa : OID.sha256Rsa, algorithmParams: new asn1js.Null() });

/** How a test signs: RSA PKCS#1 v1.5 with SHA-256 or SHA-1, RSASSA-PSS (well or badly parameterized), ECDSA. */
type Scheme = 'sha1' | 'sha256' | 'pss' | 'pss-sha1' | 'pss-unreadable' | 'ecdsa';

function signed(
  scheme: Scheme,
  tbs: Buffer,
  key: KeyObject,
): { signatureAlgorithm: pkijs.AlgorithmIdentifier; signature: asn1js.BitString } {
  const sha256 = new pkijs.AlgorithmIdentifier({ algorithmId: '2.16.840.1.101.3.4.2.1', algorithmParams: new asn1js.Null() });
  const pss = (algorithmParams: asn1js.AsnType) => new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.113549.1.1.10', algorithmParams });
  const [signatureAlgorithm, value] =
    scheme === 'sha1' || scheme === 'sha256'
      ? [algorithm(scheme), sign(scheme, tbs, key)]
      : scheme === 'ecdsa'
        ? [new pkijs.AlgorithmIdentifier({ algorithmId: '1.2.840.10045.4.3.2' }), sign('sha256', tbs, { key, dsaEncoding: 'der' })]
        : scheme === 'pss'
          ? [
              pss(
                new pkijs.RSASSAPSSParams({
                  hashAlgorithm: sha256,
                  maskGenAlgorithm: new pkijs.AlgorithmIdentifier({
                    algorithmId: '1.2.840.113549.1.1.8',
                    algorithmParams: sha256.toSchema(),
                  }),
                  saltLength: 32,
                }).toSchema(),
              ),
              sign('sha256', tbs, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }),
            ]
          : [
              pss(scheme === 'pss-sha1' ? new asn1js.Sequence({ value: [] }) : new asn1js.Integer({ value: 5 })),
              sign('sha1', tbs, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 20 }),
            ];
  return { signatureAlgorithm, signature: new asn1js.BitString({ valueHex: value }) };
}

const ext = (extnID: string, critical: boolean, value: asn1js.AsnType) =>
  new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });

const tagged = (tagNumber: number, value: asn1js.AsnType[]) => new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber }, value });
const implicit = (tagNumber: number, bytes: number[] | Buffer) =>
  new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber }, valueHex: new Uint8Array(bytes) });

function keyUsage(bits: number[]): asn1js.BitString {
  let byte = 0;
  for (const b of bits) byte |= 0x80 >> b;
  return new asn1js.BitString({ valueHex: new Uint8Array([byte]), unusedBits: 7 - Math.max(...bits) });
}

/** distributionPoint [0] { fullName [0] { uniformResourceIdentifier [6] } } */
const distributionPoint = (uri: string) => tagged(0, [tagged(0, [implicit(6, Buffer.from(uri))])]);

function name(cn: string): pkijs.RelativeDistinguishedNames {
  const set = new asn1js.Set({
    value: [new pkijs.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: cn }) }).toSchema()],
  });
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(new asn1js.Sequence({ value: [set] }).toBER(false)).result });
}

/** A certificate for `key`, issued by `issuer` (or self-signed), with exactly `extensions`. */
async function certificate(options: {
  subject: string;
  key: KeyObject;
  issuer?: Party;
  extensions: pkijs.Extension[];
  notBefore?: Date;
  notAfter?: Date;
  hash?: 'sha1' | 'sha256';
}): Promise<Party> {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ valueHex: Buffer.concat([Buffer.from([0x41]), randomBytes(15)]) });
  cert.subject = name(options.subject);
  cert.issuer = options.issuer ? options.issuer.cert.subject : cert.subject;
  cert.notBefore = new pkijs.Time({ type: 0, value: options.notBefore ?? new Date(T0.getTime() - DAY) });
  cert.notAfter = new pkijs.Time({ type: 0, value: options.notAfter ?? new Date(T0.getTime() + 365 * DAY) });
  cert.subjectPublicKeyInfo = pkijs.PublicKeyInfo.fromBER(createPublicKey(options.key).export({ type: 'spki', format: 'der' }));
  cert.extensions = options.extensions;
  const alg = algorithm(options.hash ?? 'sha256');
  cert.signature = alg;
  cert.signatureAlgorithm = alg;
  const tbs = Buffer.from(cert.encodeTBS().toBER(false));
  const signer = options.issuer?.key ?? options.key;
  cert.signatureValue = new asn1js.BitString({ valueHex: sign(options.hash ?? 'sha256', tbs, signer) });
  return { cert: pkijs.Certificate.fromBER(cert.toSchema(true).toBER(false)), key: options.key };
}

/** A delegated responder: issued by `issuer`, with id-kp-OCSPSigning and digitalSignature unless told otherwise. */
function responder(
  options: {
    issuer?: Party;
    eku?: boolean;
    usage?: number[];
    key?: KeyObject;
    notBefore?: Date;
    notAfter?: Date;
    hash?: 'sha1' | 'sha256';
  } = {},
) {
  const extensions = [ext(OID.keyUsage, true, keyUsage(options.usage ?? [0]))];
  if (options.eku !== false)
    extensions.push(ext(OID.extKeyUsage, false, new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: OID.ocspSigning })] })));
  return certificate({
    subject: 'OCSP responder',
    key: options.key ?? responderKey,
    issuer: options.issuer ?? ca,
    extensions,
    ...(options.notBefore ? { notBefore: options.notBefore } : {}),
    ...(options.notAfter ? { notAfter: options.notAfter } : {}),
    ...(options.hash ? { hash: options.hash } : {}),
  });
}

const certId = (cert = seal, issuer = ca.cert, hashAlgorithm = 'SHA-256') =>
  pkijs.CertID.create(cert, { hashAlgorithm, issuerCertificate: issuer });

type Status = 'good' | 'unknown' | { revokedAt: Date; reason?: number };

function certStatus(status: Status): asn1js.BaseBlock {
  if (status === 'good') return new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 } });
  if (status === 'unknown') return new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 2 } });
  const value: asn1js.AsnType[] = [new asn1js.GeneralizedTime({ valueDate: status.revokedAt })];
  if (status.reason !== undefined) value.push(tagged(0, [new asn1js.Enumerated({ value: status.reason })]));
  return tagged(1, value);
}

/** An OCSPResponse (DER) signed by `signer`, naming it by name or by key, carrying `certs`. */
async function ocsp(options: {
  signer?: Party;
  responderId?: 'name' | 'key';
  certs?: pkijs.Certificate[];
  status?: Status;
  certID?: pkijs.CertID;
  thisUpdate?: Date;
  nextUpdate?: Date | null;
  producedAt?: Date;
  hash?: Scheme;
  extensions?: pkijs.Extension[];
}): Promise<Buffer> {
  const signer = options.signer ?? ca;
  const thisUpdate = options.thisUpdate ?? FRESH;
  const data = new pkijs.ResponseData();
  data.responderID =
    options.responderId === 'key'
      ? new asn1js.OctetString({
          valueHex: createHash('sha1').update(signer.cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest(),
        })
      : signer.cert.subject;
  data.producedAt = options.producedAt ?? thisUpdate;
  data.responses.push(
    new pkijs.SingleResponse({
      certID: options.certID ?? (await certId()),
      certStatus: certStatus(options.status ?? 'good'),
      thisUpdate,
      ...(options.nextUpdate === null ? {} : { nextUpdate: options.nextUpdate ?? new Date(thisUpdate.getTime() + 7 * DAY) }),
    }),
  );
  if (options.extensions) data.responseExtensions = options.extensions;
  const tbs = Buffer.from((data.toSchema(true) as asn1js.Sequence).toBER(false));
  data.tbsView = new Uint8Array(tbs);
  const basic = new pkijs.BasicOCSPResponse({
    tbsResponseData: data,
    ...signed(options.hash ?? 'sha256', tbs, signer.key),
    certs: options.certs ?? [signer.cert],
  });
  return wrapBasic(basic.toSchema().toBER(false));
}

function wrapBasic(basic: ArrayBuffer, status = 0): Buffer {
  const response = new pkijs.OCSPResponse({
    responseStatus: new asn1js.Enumerated({ value: status }),
    responseBytes: new pkijs.ResponseBytes({ responseType: OID.ocspBasic, response: new asn1js.OctetString({ valueHex: basic }) }),
  });
  return Buffer.from(response.toSchema().toBER(false));
}

interface Entry {
  serial?: pkijs.Certificate;
  revokedAt?: Date;
  reason?: number;
  extensions?: pkijs.Extension[];
}

/** A CertificateList (DER) signed by `signer`, in `signer`'s name unless told otherwise. */
function crl(options: {
  signer?: Party;
  version?: number;
  thisUpdate?: Date;
  nextUpdate?: Date;
  entries?: Entry[];
  extensions?: pkijs.Extension[];
  hash?: 'sha1' | 'sha256';
}): Buffer {
  const signer = options.signer ?? ca;
  const thisUpdate = options.thisUpdate ?? FRESH;
  const list = new pkijs.CertificateRevocationList({
    version: options.version ?? 1,
    issuer: signer.cert.subject,
    thisUpdate: new pkijs.Time({ type: 1, value: thisUpdate }),
    nextUpdate: new pkijs.Time({ type: 1, value: options.nextUpdate ?? new Date(thisUpdate.getTime() + 7 * DAY) }),
  });
  if (options.entries?.length) {
    list.revokedCertificates = options.entries.map(
      (e) =>
        new pkijs.RevokedCertificate({
          userCertificate: new asn1js.Integer({ valueHex: (e.serial ?? seal).serialNumber.valueBlock.valueHexView }),
          revocationDate: new pkijs.Time({ type: 1, value: e.revokedAt ?? new Date(POE.getTime() - DAY) }),
          ...(e.reason !== undefined || e.extensions
            ? {
                crlEntryExtensions: new pkijs.Extensions({
                  extensions: [
                    ...(e.reason !== undefined ? [ext(OID.reasonCode, false, new asn1js.Enumerated({ value: e.reason }))] : []),
                    ...(e.extensions ?? []),
                  ],
                }),
              }
            : {}),
        }),
    );
  }
  list.crlExtensions = new pkijs.Extensions({
    extensions: [ext(OID.crlNumber, false, new asn1js.Integer({ value: 7 })), ...(options.extensions ?? [])],
  });
  const alg = algorithm(options.hash ?? 'sha256');
  list.signature = alg;
  list.signatureAlgorithm = alg;
  const tbs = Buffer.from((list.toSchema(true) as asn1js.Sequence).valueBlock.value[0]!.toBER(false));
  list.tbsView = new Uint8Array(tbs);
  list.signatureValue = new asn1js.BitString({ valueHex: sign(options.hash ?? 'sha256', tbs, signer.key) });
  return Buffer.from((list.toSchema() as asn1js.Sequence).toBER(false));
}

const problem = (verdict: { problems: string[] }, text: string) => expect(verdict.problems.join('\n')).toContain(text);

// --- OCSP ----------------------------------------------------------------------------------------------------------

describe('OCSP responses', () => {
  it('a good response by the issuer (the sandbox responder, SHA-1 CertID) makes the certificate good', async () => {
    const verdict = await check({ ocsps: [await authority.ocsp(seal, FRESH)] });
    expect(verdict).toMatchObject({ status: 'good', problems: [] });
    expect(verdict.source).toMatch(/^OCSP response produced 2026-03-02T11:00:00\.000Z, thisUpdate 2026-03-02T11:00:00\.000Z/);
  });

  it('a good response with a SHA-256 CertID, responder named by its key, is used', async () => {
    expect(await check({ ocsps: [await ocsp({ responderId: 'key' })] })).toMatchObject({ status: 'good' });
  });

  it('a response saying revoked before the signature existed: revoked, before the poe, with its reason', async () => {
    const revokedAt = new Date(POE.getTime() - DAY);
    const verdict = await check({ ocsps: [await ocsp({ status: { revokedAt, reason: 1 } })] });
    expect(verdict).toMatchObject({
      status: 'revoked',
      revokedAt: revokedAt.toISOString(),
      revokedBeforePoe: true,
      reason: 'keyCompromise',
    });
    expect(verdict.source).toContain('OCSP response');
  });

  it('the sandbox’s responder, once the seal is revoked, says so; its CRL lists it too', async () => {
    const revokedAt = new Date(POE.getTime() - DAY).toISOString();
    const expected = { status: 'revoked', revokedAt, revokedBeforePoe: true, reason: 'keyCompromise' };
    expect(await check({ ocsps: [await revoking.ocsp(seal, FRESH)] })).toMatchObject(expected);
    expect(await check({ crls: [await revoking.crl(FRESH)] })).toMatchObject(expected);
    // A fresh "good" from before the revocation (the file's older data) does not outweigh it.
    expect(await check({ ocsps: [await authority.ocsp(seal, FRESH), await revoking.ocsp(seal, FRESH)] })).toMatchObject(expected);
    // The other certificate stays good.
    expect(
      await check({ ocsps: [await revoking.ocsp(sibling, FRESH)], crls: [await revoking.crl(FRESH)] }, POE, AT, sibling),
    ).toMatchObject({
      status: 'good',
    });
  });

  it('a revocation at the very poe counts as before it; one after it does not', async () => {
    expect(await check({ ocsps: [await ocsp({ status: { revokedAt: POE } })] })).toMatchObject({
      status: 'revoked',
      revokedBeforePoe: true,
    });
    const after = new Date(POE.getTime() + 30 * 60 * SECOND);
    const verdict = await check({ ocsps: [await ocsp({ status: { revokedAt: after, reason: 4 } })] });
    expect(verdict).toMatchObject({ status: 'revoked', revokedAt: after.toISOString(), revokedBeforePoe: false, reason: 'superseded' });
  });

  it('a response about another certificate of the same issuer (other serial) is not used', async () => {
    const verdict = await check({ ocsps: [await authority.ocsp(sibling, FRESH)] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'OCSP response 1 is about another certificate');
  });

  it('a CertID with the issuer’s key hash but another name hash is not used', async () => {
    const id = await certId();
    id.issuerNameHash = (await certId(seal, other.cert)).issuerNameHash;
    const verdict = await check({ ocsps: [await ocsp({ certID: id })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'about another certificate');
  });

  it('a CertID with the issuer’s name hash but another key hash (a same-name CA) is not used', async () => {
    const id = await certId();
    id.issuerKeyHash = (await certId(seal, sameName.cert)).issuerKeyHash;
    const verdict = await check({ ocsps: [await ocsp({ certID: id })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'about another certificate');
  });

  it('a CertID hashed with SHA-384 is not used', async () => {
    const verdict = await check({ ocsps: [await ocsp({ certID: await certId(seal, ca.cert, 'SHA-384') })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'a hash other than SHA-1 or SHA-256');
  });

  it('a response signed by another CA (for the right CertID) is not used', async () => {
    const verdict = await check({ ocsps: [await ocsp({ signer: other })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'OCSP response 1 is signed by a responder the issuer did not delegate');
  });

  it('a response signed by another CA with the issuer’s name, carrying that CA, is not used', async () => {
    const verdict = await check({ ocsps: [await ocsp({ signer: sameName })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, "is not signed by the certificate's issuer: its signature does not verify");
  });

  it('a response whose signature was altered is not used', async () => {
    const der = await ocsp({});
    // The signature value ends the BasicOCSPResponse, just before the certificates: flip a byte well inside it.
    const caDer = Buffer.from(ca.cert.toSchema().toBER(false));
    const at = der.indexOf(caDer) - 40;
    der[at] = der[at]! ^ 0x01;
    const verdict = await check({ ocsps: [der] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'its signature does not verify');
  });

  it('a response signed with SHA-1 by the issuer is not used', async () => {
    const verdict = await check({ ocsps: [await ocsp({ hash: 'sha1' })] });
    expect(verdict.status).toBe('unknown');
    expect(verdict.problems).toEqual([expect.stringMatching(/^OCSP response 1 does not meet the cryptographic floor: .*SHA-1/)]);
  });

  it('SHA-1 and RSA under 2048 bits are refused even when the shared policy still allowed them (checked in 2015)', async () => {
    const poe = new Date('2014-06-01T00:00:00Z');
    const at = new Date('2015-01-01T00:00:00Z');
    const thisUpdate = new Date('2014-07-01T00:00:00Z');
    const sha1 = await check({ ocsps: [await ocsp({ hash: 'sha1', thisUpdate, producedAt: thisUpdate })] }, poe, at);
    expect(sha1.status).toBe('unknown');
    problem(sha1, 'uses SHA-1 or an older hash');
    const delegate = await responder({ key: smallKey, notBefore: new Date('2014-01-01T00:00:00Z') });
    const small = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert], thisUpdate })] }, poe, at);
    expect(small.status).toBe('unknown');
    problem(small, '1024 bits, fewer than 2048');
    expect((await check({ crls: [crl({ hash: 'sha1', thisUpdate })] }, poe, at)).status).toBe('unknown');
    // The same, SHA-256 and 2048 bits: used.
    expect((await check({ ocsps: [await ocsp({ thisUpdate })] }, poe, at)).status).toBe('good');
  });

  it('a response signed with RSASSA-PSS over SHA-256 is used; PSS over SHA-1, or with unreadable parameters, is not', async () => {
    expect(await check({ ocsps: [await ocsp({ hash: 'pss' })] })).toMatchObject({ status: 'good' });
    const sha1 = await check({ ocsps: [await ocsp({ hash: 'pss-sha1' })] });
    expect(sha1.status).toBe('unknown');
    expect(sha1.problems).toEqual([expect.stringMatching(/cryptographic floor: .*SHA-1/)]);
    const unreadable = await check({ ocsps: [await ocsp({ hash: 'pss-unreadable' })] });
    expect(unreadable.status).toBe('unknown');
    expect(unreadable.problems).toEqual([expect.stringMatching(/cryptographic floor: .*RSASSA-PSS parameters cannot be read/)]);
  });

  it('a response that is not successful is not used', async () => {
    const verdict = await check({ ocsps: [wrapBasic(new ArrayBuffer(0), 6)] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'is not successful (responseStatus 6)');
  });

  it('a response saying "unknown" (the sandbox’s answer for a certificate it does not know) is not used', async () => {
    const request = new pkijs.OCSPRequest();
    await request.createForCertificate(seal, { hashAlgorithm: 'SHA-256', issuerCertificate: ca.cert });
    const answer = await authority.answer(new Uint8Array(request.toSchema(true).toBER(false)), [], FRESH);
    const verdict = await check({ ocsps: [answer] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'says the certificate is unknown to its responder');
    // The same responder, asked about a certificate it knows, with SHA-256: good.
    const known = await authority.answer(new Uint8Array(request.toSchema(true).toBER(false)), [seal], FRESH);
    expect(await check({ ocsps: [known] })).toMatchObject({ status: 'good' });
  });

  it('a response with a critical extension it does not understand is not used', async () => {
    const odd = ext('1.3.6.1.4.1.99999.1', true, new asn1js.Null());
    const verdict = await check({ ocsps: [await ocsp({ extensions: [odd] })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'has a critical extension that is not understood');
  });

  describe('dates', () => {
    it('a good response issued before the signature existed (stale) is not used; one issued a second before is', async () => {
      const stale = await check({ ocsps: [await ocsp({ thisUpdate: new Date(POE.getTime() - 2 * SECOND) })] });
      expect(stale.status).toBe('unknown');
      problem(stale, 'is stale');
      const edge = await check({ ocsps: [await ocsp({ thisUpdate: new Date(POE.getTime() - SECOND) })] });
      expect(edge.status).toBe('good');
    });

    it('the sandbox’s own stale response is not used either', async () => {
      const verdict = await check({ ocsps: [await authority.ocsp(seal, new Date(POE.getTime() - HOUR))] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'is stale');
    });

    it('a response issued after the time of checking is not used; one issued at it is', async () => {
      const future = await check({ ocsps: [await ocsp({ thisUpdate: new Date(AT.getTime() + SECOND) })] });
      expect(future.status).toBe('unknown');
      problem(future, 'after the time of checking');
      expect(await check({ ocsps: [await ocsp({ thisUpdate: AT })] })).toMatchObject({ status: 'good' });
    });

    it('a response whose nextUpdate is before its thisUpdate is not used; one without nextUpdate is', async () => {
      const backwards = await check({ ocsps: [await ocsp({ nextUpdate: new Date(FRESH.getTime() - SECOND) })] });
      expect(backwards.status).toBe('unknown');
      problem(backwards, 'nextUpdate before its thisUpdate');
      expect(await check({ ocsps: [await ocsp({ nextUpdate: null })] })).toMatchObject({ status: 'good' });
    });

    it('a stale response saying revoked (final) still counts; a stale certificateHold does not', async () => {
      const thisUpdate = new Date(POE.getTime() - DAY);
      const revokedAt = new Date(POE.getTime() - 2 * DAY);
      const final = await check({ ocsps: [await ocsp({ thisUpdate, status: { revokedAt, reason: 1 } })] });
      expect(final).toMatchObject({ status: 'revoked', revokedBeforePoe: true });
      const hold = await check({ ocsps: [await ocsp({ thisUpdate, status: { revokedAt, reason: 6 } })] });
      expect(hold.status).toBe('unknown');
      problem(hold, 'certificateHold may have been lifted');
      // Fresh, a hold is a revocation like any other.
      const freshHold = await check({ ocsps: [await ocsp({ status: { revokedAt, reason: 6 } })] });
      expect(freshHold).toMatchObject({ status: 'revoked', reason: 'certificateHold' });
    });

    it('a response saying removeFromCRL is not used', async () => {
      const verdict = await check({ ocsps: [await ocsp({ status: { revokedAt: POE, reason: 8 } })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'removeFromCRL');
    });
  });

  describe('delegated responders', () => {
    it('a responder the issuer certified for OCSP signing is used', async () => {
      const delegate = await responder();
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('good');
      expect(verdict.source).toContain('signed by a responder the issuer delegated');
      // …and named by its key.
      expect(await check({ ocsps: [await ocsp({ signer: delegate, responderId: 'key', certs: [delegate.cert] })] })).toMatchObject({
        status: 'good',
      });
    });

    it('a responder with a P-256 key, signing with ECDSA, is used', async () => {
      const delegate = await responder({ key: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert], hash: 'ecdsa' })] });
      expect(verdict).toMatchObject({ status: 'good', problems: [] });
    });

    it('a responder without id-kp-OCSPSigning is refused', async () => {
      const delegate = await responder({ eku: false });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'not for OCSP signing');
    });

    it('a responder for OCSP signing issued by another CA is refused', async () => {
      const delegate = await responder({ issuer: other });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert, other.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'issued by another name');
    });

    it('a responder for OCSP signing issued by a CA with the issuer’s name (another key) is refused', async () => {
      const delegate = await responder({ issuer: sameName });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert, sameName.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'is not signed by the issuer');
    });

    it('a responder whose certificate had ended when the response was produced is refused', async () => {
      const delegate = await responder({ notAfter: new Date(POE.getTime() - DAY) });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'not valid when the response was produced');
    });

    it('a responder whose key usage excludes digital signatures is refused', async () => {
      const delegate = await responder({ usage: [2] });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'key usage excludes digital signatures');
    });

    it('a responder with an RSA key under 2048 bits is refused', async () => {
      const delegate = await responder({ key: smallKey });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      expect(verdict.problems).toEqual([expect.stringMatching(/cryptographic floor: .*1024 bits/)]);
    });

    it('a responder certified with a SHA-1 signature is refused', async () => {
      const delegate = await responder({ hash: 'sha1' });
      const verdict = await check({ ocsps: [await ocsp({ signer: delegate, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      expect(verdict.problems).toEqual([
        expect.stringMatching(/did not delegate: its certificate does not meet the cryptographic floor .*SHA-1/),
      ]);
    });

    it('a responder that signed nothing of it (the response signed by another key) is refused', async () => {
      const delegate = await responder();
      const verdict = await check({ ocsps: [await ocsp({ signer: { cert: delegate.cert, key: other.key }, certs: [delegate.cert] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'is not signed by its delegated responder');
    });
  });
});

// --- CRLs ----------------------------------------------------------------------------------------------------------

describe('CRLs', () => {
  it('an empty, fresh CRL by the issuer (the sandbox’s) makes the certificate good', async () => {
    const verdict = await check({ crls: [await authority.crl(FRESH)] });
    expect(verdict).toMatchObject({ status: 'good', problems: [] });
    expect(verdict.source).toMatch(/^CRL thisUpdate 2026-03-02T11:00:00\.000Z, nextUpdate 2026-03-09T11:00:00\.000Z/);
  });

  it('a CRL listing the certificate makes it revoked, with its date and reason', async () => {
    const revokedAt = new Date(POE.getTime() - DAY);
    const verdict = await check({ crls: [crl({ entries: [{ serial: sibling }, { revokedAt, reason: 1 }] })] });
    expect(verdict).toMatchObject({
      status: 'revoked',
      revokedAt: revokedAt.toISOString(),
      revokedBeforePoe: true,
      reason: 'keyCompromise',
    });
    expect(verdict.source).toContain('CRL thisUpdate');
  });

  it('a CRL listing only another certificate of the issuer says good', async () => {
    expect(await check({ crls: [crl({ entries: [{ serial: sibling }] })] })).toMatchObject({ status: 'good' });
  });

  it('an empty CRL signed by another CA with the same name is not used', async () => {
    const verdict = await check({ crls: [crl({ signer: sameName })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, "CRL 1 is not signed by the certificate's issuer");
  });

  it('an empty CRL by another CA is not used', async () => {
    const verdict = await check({ crls: [crl({ signer: other })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'another name');
  });

  it('a stale empty CRL is not used; a stale CRL listing the certificate still counts', async () => {
    const stale = await check({ crls: [await authority.crl(new Date(POE.getTime() - 2 * SECOND))] });
    expect(stale.status).toBe('unknown');
    problem(stale, 'CRL 1 is stale');
    const thisUpdate = new Date(POE.getTime() - DAY);
    const listed = await check({ crls: [crl({ thisUpdate, entries: [{ revokedAt: new Date(POE.getTime() - 2 * DAY) }] })] });
    expect(listed).toMatchObject({ status: 'revoked', revokedBeforePoe: true });
    const hold = await check({ crls: [crl({ thisUpdate, entries: [{ revokedAt: new Date(POE.getTime() - 2 * DAY), reason: 6 }] })] });
    expect(hold.status).toBe('unknown');
  });

  it('a CRL issued after the time of checking, or with nextUpdate before thisUpdate, is not used', async () => {
    const future = await check({ crls: [crl({ thisUpdate: new Date(AT.getTime() + SECOND) })] });
    expect(future.status).toBe('unknown');
    problem(future, 'after the time of checking');
    const backwards = await check({ crls: [crl({ nextUpdate: new Date(FRESH.getTime() - SECOND) })] });
    expect(backwards.status).toBe('unknown');
    problem(backwards, 'nextUpdate before its thisUpdate');
  });

  it('a version 1 CRL is not used', async () => {
    const verdict = await check({ crls: [crl({ version: 0 })] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'not a version 2 CRL');
  });

  it('a CRL signed with SHA-1 is not used', async () => {
    const verdict = await check({ crls: [crl({ hash: 'sha1' })] });
    expect(verdict.status).toBe('unknown');
    expect(verdict.problems).toEqual([expect.stringMatching(/^CRL 1 does not meet the cryptographic floor: .*SHA-1/)]);
  });

  it('a CRL by an issuer whose key usage excludes cRLSign is not used', async () => {
    const noCrlSign = await certificate({
      subject: 'CA without cRLSign',
      key: responderKey,
      extensions: [
        ext(OID.basicConstraints, true, new asn1js.Sequence({ value: [new asn1js.Boolean({ value: true })] })),
        ext(OID.keyUsage, true, keyUsage([5])),
      ],
    });
    const leaf = await certificate({ subject: 'leaf', key: smallKey, issuer: noCrlSign, extensions: [] });
    const verdict = await check({ crls: [crl({ signer: noCrlSign })] }, POE, AT, leaf.cert, noCrlSign.cert);
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'excludes CRL signing');
  });

  describe('extensions', () => {
    const idp = (value: asn1js.AsnType[]) => ext(OID.issuingDistributionPoint, true, new asn1js.Sequence({ value }));

    it('a delta CRL is not used', async () => {
      const verdict = await check({ crls: [crl({ extensions: [ext(OID.deltaCrlIndicator, true, new asn1js.Integer({ value: 6 }))] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'is a delta CRL');
    });

    it('a critical extension that is not understood makes the CRL unusable', async () => {
      const verdict = await check({ crls: [crl({ extensions: [ext('1.3.6.1.4.1.99999.2', true, new asn1js.Null())] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'critical extension that is not understood');
    });

    it('an indirect CRL is not used', async () => {
      const verdict = await check({ crls: [crl({ extensions: [idp([implicit(4, [0xff])])] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'is an indirect CRL');
    });

    it('a CRL for some reasons only is not used', async () => {
      const verdict = await check({ crls: [crl({ extensions: [idp([implicit(3, [0x07, 0x80])])] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'some revocation reasons only');
    });

    it('a CRL for CA certificates only does not cover an end-entity certificate; one for end entities does', async () => {
      const caOnly = await check({ crls: [crl({ extensions: [idp([implicit(2, [0xff])])] })] });
      expect(caOnly.status).toBe('unknown');
      problem(caOnly, 'CA certificates only');
      expect(await check({ crls: [crl({ extensions: [idp([implicit(1, [0xff])])] })] })).toMatchObject({ status: 'good' });
    });

    it('a partition of the CRL (its distribution point) covers only certificates that name it', async () => {
      const partition = crl({ extensions: [idp([distributionPoint('http://crl.example/part-2.crl')])] });
      const verdict = await check({ crls: [partition] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'a distribution point the certificate does not name');
      const named = await certificate({
        subject: 'seal with a CRL distribution point',
        key: responderKey,
        issuer: ca,
        extensions: [
          ext(
            OID.crlDistributionPoints,
            false,
            new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [distributionPoint('http://crl.example/part-2.crl')] })] }),
          ),
        ],
      });
      expect(await check({ crls: [partition] }, POE, AT, named.cert)).toMatchObject({ status: 'good' });
      const elsewhere = crl({ extensions: [idp([distributionPoint('http://crl.example/part-1.crl')])] });
      expect((await check({ crls: [elsewhere] }, POE, AT, named.cert)).status).toBe('unknown');
    });

    it('an entry naming another certificate issuer (an indirect CRL in disguise) makes the CRL unusable', async () => {
      const issuerName = new asn1js.Sequence({ value: [tagged(4, [other.cert.subject.toSchema()])] });
      const verdict = await check({
        crls: [crl({ entries: [{ serial: sibling, extensions: [ext(OID.certificateIssuer, true, issuerName)] }] })],
      });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'an indirect CRL');
    });

    it('a critical entry extension that is not understood makes the CRL unusable', async () => {
      const entry = { serial: sibling, extensions: [ext('1.3.6.1.4.1.99999.3', true, new asn1js.Null())] };
      const verdict = await check({ crls: [crl({ entries: [entry] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'critical entry extension');
    });

    it('a removeFromCRL entry (a delta CRL’s) makes the CRL unusable', async () => {
      const verdict = await check({ crls: [crl({ entries: [{ serial: sibling, reason: 8 }] })] });
      expect(verdict.status).toBe('unknown');
      problem(verdict, 'removeFromCRL');
    });
  });
});

// --- several sources, hostile input, bounds ------------------------------------------------------------------------

describe('several sources', () => {
  it('a revocation wins over good, whichever comes first', async () => {
    const good = await authority.ocsp(seal, FRESH);
    const listed = crl({ entries: [{ revokedAt: new Date(POE.getTime() + HOUR / 2), reason: 5 }] });
    const verdict = await check({ ocsps: [good], crls: [listed] });
    expect(verdict).toMatchObject({ status: 'revoked', revokedBeforePoe: false, reason: 'cessationOfOperation' });
    const fromOcsp = await check({ ocsps: [await ocsp({ status: { revokedAt: POE, reason: 1 } })], crls: [await authority.crl(FRESH)] });
    expect(fromOcsp).toMatchObject({ status: 'revoked', reason: 'keyCompromise' });
  });

  it('good needs one usable source; the others are explained', async () => {
    const verdict = await check({
      ocsps: [await authority.ocsp(seal, new Date(POE.getTime() - HOUR)), await ocsp({ signer: other })],
      crls: [await authority.crl(FRESH)],
    });
    expect(verdict.status).toBe('good');
    expect(verdict.source).toContain('CRL');
    expect(verdict.problems).toHaveLength(2);
    problem(verdict, 'OCSP response 1 is stale');
    problem(verdict, 'OCSP response 2 is signed by a responder the issuer did not delegate');
  });

  it('without any data the status is unknown', async () => {
    expect(await check({})).toEqual({ status: 'unknown', problems: [] });
  });

  it('a remembered signature does not spare the dates nor the CertID', async () => {
    const der = await authority.ocsp(seal, FRESH);
    expect((await check({ ocsps: [der] })).status).toBe('good');
    const later = await check({ ocsps: [der] }, new Date(FRESH.getTime() + HOUR));
    expect(later.status).toBe('unknown');
    problem(later, 'is stale');
    const early = await check({ ocsps: [der] }, POE, new Date(FRESH.getTime() - SECOND));
    expect(early.status).toBe('unknown');
    const another = await check({ ocsps: [der] }, POE, AT, sibling);
    expect(another.status).toBe('unknown');
    problem(another, 'about another certificate');
    const list = crl({ entries: [{ serial: sibling }] });
    expect((await check({ crls: [list] })).status).toBe('good');
    expect((await check({ crls: [list] }, POE, AT, sibling)).status).toBe('revoked');
    expect((await check({ crls: [list] }, new Date(FRESH.getTime() + HOUR))).status).toBe('unknown');
  });
});

describe('hostile input', () => {
  it('garbage, truncated and misplaced DER are problems, never exceptions', async () => {
    const good = await authority.ocsp(seal, FRESH);
    const list = await authority.crl(FRESH);
    const verdict = await check({
      ocsps: [randomBytes(300), Buffer.alloc(0), good.subarray(0, good.length - 10), Buffer.concat([good, Buffer.from([0])]), list],
      crls: [Buffer.from('not a CRL at all'), list.subarray(0, 100), Buffer.from(seal.toSchema().toBER(false)), good],
    });
    expect(verdict.status).toBe('unknown');
    expect(verdict.problems).toHaveLength(9);
    problem(verdict, 'OCSP response 1 is not a readable OCSPResponse');
    problem(verdict, 'CRL 1 is not a readable CertificateList');
    for (const p of verdict.problems) expect(p.length).toBeLessThan(300);
  });

  it('values that are not even bytes are problems, never exceptions', async () => {
    const verdict = await check({ ocsps: [null as unknown as Buffer], crls: [{} as Buffer] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'OCSP response 1 cannot be checked');
    problem(verdict, 'CRL 1 ');
  });

  it('an unreadable certificate or issuer is a problem, never an exception', async () => {
    const verdict = await revocationStatus(
      new pkijs.Certificate(),
      new pkijs.Certificate(),
      { ocsps: [await authority.ocsp(seal, FRESH)], crls: [] },
      POE,
      AT,
    );
    expect(verdict.status).toBe('unknown');
    expect(verdict.problems.length).toBeGreaterThan(0);
  });

  it('a CRL over 4 MiB is not read', async () => {
    const big = Buffer.concat([await authority.crl(FRESH), Buffer.alloc(MAX_REVOCATION_BYTES)]);
    const verdict = await check({ crls: [big] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, 'is larger than 4194304 bytes and was not read');
  });

  it('at most 32 OCSP responses and 32 CRLs are considered', async () => {
    const junk = Array.from({ length: 32 }, () => randomBytes(16));
    const verdict = await check({ ocsps: [...junk, await authority.ocsp(seal, FRESH)], crls: [...junk, await authority.crl(FRESH)] });
    expect(verdict.status).toBe('unknown');
    problem(verdict, '1 OCSP responses beyond the first 32 were not considered');
    problem(verdict, '1 CRLs beyond the first 32 were not considered');
    expect(verdict.problems).toHaveLength(66);
  });
});
