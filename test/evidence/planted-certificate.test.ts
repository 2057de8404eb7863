// Issue 38, item 1: a signature field a caller plants in its document carries a certificate whose AIA (caIssuers,
// OCSP) and CRL distribution point URLs are the caller's. Neither the sandbox sealing that document nor the worker's
// revocation client and evidence renewal may request any of them: a local listener stands in for the internal
// service the URLs would aim at, and sees nothing. Only what existed before the fix is used here, so that each test
// shows what the fix changed (the policy itself: test/client/outbound-policy.test.ts).
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { checkPdfSignature } from '../../src/evidence/pades-verify.js';
import { certificateDer, parseCertificates } from '../../src/evidence/pki.js';
import { renewEvidence } from '../../src/evidence/renewal.js';
import { HttpRevocationProvider } from '../../src/evidence/revocation-client.js';
import { providerTrust, trustAnchorsOnly } from '../../src/evidence/trust.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { certDer } from '../corpus/pki.js';
import { listener, plantedPdf, plantedPki, sealIncrementally, type Listener } from '../support/planted-signature.js';
import { timestampingCa } from '../support/renewal.js';

const MiB = 1024 * 1024;
let work: string;
let seal: SandboxSeal;
let sealCert: Uint8Array;
let open: Listener[] = [];

async function listen(): Promise<Listener> {
  const l = await listener();
  open.push(l);
  return l;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'esign-planted-'));
  seal = await SandboxSeal.open(join(work, 'pki'));
  sealCert = certificateDer(parseCertificates(await readFile(join(work, 'pki', 'seal.pem'), 'utf8'))[0]!);
});
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

it('the revocation client asks nothing about a planted certificate, not even the configured responder', async () => {
  const l = await listen();
  const planted = plantedPki(l.url);
  const provider = new HttpRevocationProvider({
    ocspUrl: `${l.url}/configured-ocsp`,
    crlUrl: `${l.url}/configured.crl`,
    trust: providerTrust(seal),
    allowedUrls: [l.url],
  });
  expect(await provider.getOCSP(certDer(planted.signer.cert), certDer(planted.intermediate.cert))).toBeNull();
  expect(await provider.getCRL(certDer(planted.signer.cert))).toBeNull();
  expect(await provider.getOCSP(certDer(planted.intermediate.cert), certDer(planted.root.cert))).toBeNull();
  expect(await provider.getCRL(certDer(planted.intermediate.cert))).toBeNull();
  expect(l.requests).toEqual([]);
  expect(l.connections).toBe(0);

  // The provider's own seal and its CA are in scope: the configured CRL is fetched for them.
  l.answer = (_req, res) => void seal.crl().then((crl) => res.writeHead(200, { 'content-type': 'application/pkix-crl' }).end(crl));
  expect(await provider.getCRL(sealCert)).not.toBeNull();
  expect(await provider.getCRL(certificateDer(parseCertificates(seal.caCertificate)[0]!))).not.toBeNull();
  expect(l.requests.map((r) => r.url)).toEqual(['/configured.crl', '/configured.crl']);
});

it('the revocation client reads a 64 MiB CRL answer only up to its bound, and gives up on a trickle at its deadline', async () => {
  const big = await listen();
  let written = 0;
  big.answer = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pkix-crl' });
    const chunk = Buffer.alloc(64 * 1024, 0x30);
    const more = () => {
      while (written < 64 * MiB) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  };
  const provider = new HttpRevocationProvider({ crlUrl: `${big.url}/ca.crl`, trust: providerTrust(seal) });
  expect(await provider.getCRL(sealCert)).toBeNull();
  await new Promise((r) => setTimeout(r, 200));
  expect(written).toBeLessThan(24 * MiB);

  const slow = await listen();
  slow.answer = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pkix-crl' });
    const timer = setInterval(() => res.write('0'), 100);
    res.on('close', () => clearInterval(timer));
  };
  const started = Date.now();
  const late = new HttpRevocationProvider({ crlUrl: `${slow.url}/ca.crl`, timeoutMs: 1000 });
  expect(await late.getCRL(sealCert)).toBeNull();
  expect(Date.now() - started).toBeLessThan(4000);
}, 20_000);

it('the sandbox seals a PDF carrying a planted signature without requesting anything its certificates name', async () => {
  const l = await listen();
  const planted = plantedPki(l.url);
  const sealed = await seal.seal(await plantedPdf(planted.signer), 'Signed by every participant', new Date());
  expect(l.requests).toEqual([]);
  expect(l.connections).toBe(0);
  expect(sealed.includes('/DocTimeStamp')).toBe(true);
});

it('the evidence renewal of a sealed file with a planted signature asks the configured services about the trusted chains only', async () => {
  const l = await listen();
  const planted = plantedPki(l.url);
  // Sealed as the sandbox seals (B-T, then its own B-LTA step), in an update that keeps the planted field readable.
  const sealed = await seal.archiveTimestamp(await sealIncrementally(await plantedPdf(planted.signer), join(work, 'pki')));
  // The file's own B-LTA step is the sandbox's (previous test); what the renewal asks is counted from here.
  const whileSealing = l.requests.splice(0);
  const later = await timestampingCa('renewal', new Date(), 20, 16);
  const trust = { ...providerTrust(seal), timestamping: [...providerTrust(seal).timestamping, ...parseCertificates(later.ca.certificate)] };
  const before = await checkPdfSignature(sealed, trust, new Date());
  expect(before.problems).toEqual([]);
  expect(before.indication).toBe('TOTAL_PASSED');

  l.answer = (req, res) => {
    if (req.url === '/renewal.crl') void later.revocation.crl().then((crl) => res.writeHead(200).end(crl));
    else res.writeHead(404).end();
  };
  const { check } = await renewEvidence(
    sealed,
    {
      timestampAuthority: { timestamp: async (digest) => new Uint8Array(await later.tsa.stamp(digest)) },
      revocationProvider: new HttpRevocationProvider({
        crlUrl: `${l.url}/renewal.crl`,
        trust,
        // Even allow-listed, what the planted certificates name is not asked: they chain to no anchor.
        allowedUrls: [l.url],
      }),
    },
    { trust, horizonMs: 0 },
    new Date(),
  );
  expect(check.indication).toBe('TOTAL_PASSED');
  const asked = l.requests.map((r) => r.url);
  expect(asked.length).toBeGreaterThan(0);
  expect(asked.filter((u) => u !== '/renewal.crl')).toEqual([]);
  expect(whileSealing).toEqual([]);
}, 60_000);

it('under a policy of anchors alone (no pins), a planted root is not asked about either', async () => {
  const l = await listen();
  const planted = plantedPki(l.url);
  const provider = new HttpRevocationProvider({
    crlUrl: `${l.url}/configured.crl`,
    trust: trustAnchorsOnly(parseCertificates(seal.caCertificate)),
    allowedUrls: [l.url],
  });
  expect(await provider.getCRL(certDer(planted.root.cert))).toBeNull();
  expect(l.connections).toBe(0);
});
