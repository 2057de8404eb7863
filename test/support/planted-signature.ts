// A signature a caller plants in the PDF it hands over (issue 38): a CMS by a certificate of its own CA, which names
// Authority Information Access (caIssuers, OCSP) and CRL distribution point URLs of the caller's choosing. The CMS
// carries the signer's certificate alone, so a library completing its chain walks the caIssuers URL.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PDFName, PDFRef } from 'pdf-lib';
import { loadSigningIdentity, parseCertificates } from '../../src/evidence/pki.js';
import { TimestampAuthority } from '../../src/evidence/timestamp.js';
import { TSA_POLICY } from '../../packages/sandbox/src/seal.js';
import { buildCms, signatureTimestampAttribute } from '../corpus/cms.js';
import { appendUpdate, basePdf, lastTrailer, place, prepare, readDoc, SIGNATURE_BYTES } from '../corpus/pdf.js';
import { certDer, digest, issue, KU, rsaKey, rsaAlgorithm, signRsa, type Issued } from '../corpus/pki.js';

const DAY = 24 * 3600 * 1000;

function extension(extnID: string, value: { toSchema(): asn1js.AsnType }): pkijs.Extension {
  return new pkijs.Extension({ extnID, critical: false, extnValue: value.toSchema().toBER(false) });
}

/** `issued` again, with AIA (OCSP, caIssuers) and CRL distribution point URLs under `base`, signed again by `issuer`. */
function naming(issued: Issued, issuer: Issued, base: string): Issued {
  const uri = (value: string) => new pkijs.GeneralName({ type: 6, value });
  const cert = issued.cert;
  cert.extensions = [
    ...(cert.extensions ?? []),
    extension(
      '1.3.6.1.5.5.7.1.1',
      new pkijs.InfoAccess({
        accessDescriptions: [
          new pkijs.AccessDescription({ accessMethod: '1.3.6.1.5.5.7.48.1', accessLocation: uri(`${base}/ocsp?token=planted-secret`) }),
          new pkijs.AccessDescription({ accessMethod: '1.3.6.1.5.5.7.48.2', accessLocation: uri(`${base}/issuer.cer`) }),
        ],
      }),
    ),
    extension(
      '2.5.29.31',
      new pkijs.CRLDistributionPoints({
        distributionPoints: [new pkijs.DistributionPoint({ distributionPoint: [uri(`${base}/planted.crl`)] })],
      }),
    ),
  ];
  cert.signature = rsaAlgorithm('SHA-256');
  cert.signatureAlgorithm = rsaAlgorithm('SHA-256');
  cert.tbsView = new Uint8Array(cert.encodeTBS().toBER(false));
  cert.signatureValue = new asn1js.BitString({ valueHex: signRsa(issuer.key, 'SHA-256', cert.tbsView).value });
  return { ...issued, cert: pkijs.Certificate.fromBER(certDer(cert)) };
}

/** The caller's own CA and a signer it issued whose certificate names URLs under `base` (an intermediate CA's too). */
export function plantedPki(base: string): { root: Issued; intermediate: Issued; signer: Issued } {
  const notBefore = new Date(Date.now() - DAY);
  const notAfter = new Date(Date.now() + 365 * DAY);
  const root = issue({
    cn: 'Planted root',
    o: 'Mallory',
    key: rsaKey(),
    notBefore,
    notAfter,
    basicConstraints: { ca: true },
    keyUsage: [KU.keyCertSign, KU.cRLSign],
  });
  const intermediate = naming(
    issue({
      cn: 'Planted intermediate',
      o: 'Mallory',
      key: rsaKey(),
      issuer: root,
      notBefore,
      notAfter,
      basicConstraints: { ca: true },
      keyUsage: [KU.keyCertSign, KU.cRLSign],
    }),
    root,
    base,
  );
  const signer = naming(
    issue({
      cn: 'Planted signer',
      o: 'Mallory',
      key: rsaKey(),
      issuer: intermediate,
      notBefore,
      notAfter,
      basicConstraints: { ca: false },
      keyUsage: [KU.digitalSignature, KU.nonRepudiation],
    }),
    intermediate,
    base,
  );
  return { root, intermediate, signer: { ...signer, chain: [intermediate.cert, root.cert] } };
}

/** A one-page PDF with a signed signature field whose CMS carries `signer`'s certificate alone. */
export async function plantedPdf(signer: Issued, title = 'Planted contract'): Promise<Buffer> {
  const prepared = await prepare(await basePdf(title, 1, 0), { signingTime: new Date(), fieldName: 'Planted', name: 'Mallory' });
  return place(prepared, async (signedBytes) =>
    buildCms({ signer, contentDigest: digest('SHA-256', signedBytes), certificates: [signer.cert] }),
  );
}

/** An HTTP listener that records every connection and request it sees and answers as `answer` says (404 by default). */
export interface Listener {
  url: string;
  server: Server;
  connections: number;
  requests: { method: string; url: string }[];
  answer: (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

export async function listener(): Promise<Listener> {
  const sockets = new Set<Socket>();
  const l: Listener = {
    url: '',
    server: undefined as unknown as Server,
    connections: 0,
    requests: [],
    answer: (_req, res) => res.writeHead(404).end(),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => l.server.close(resolve));
    },
  };
  l.server = createServer((req, res) => {
    l.requests.push({ method: req.method ?? '', url: req.url ?? '' });
    l.answer(req, res);
  });
  l.server.on('connection', (socket: Socket) => {
    l.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => l.server.listen(0, '127.0.0.1', resolve));
  l.url = `http://127.0.0.1:${(l.server.address() as AddressInfo).port}`;
  return l;
}

/** An object's body as the file writes it last ("N 0 obj" … "endobj"), for an update that rewrites it. */
function objectBody(pdf: Buffer, num: number): string {
  const text = pdf.toString('latin1');
  const at = text.lastIndexOf(`\n${num} 0 obj`);
  if (at === -1) throw new Error(`object ${num} is not written plainly`);
  const start = text.indexOf('obj', at) + 3;
  return text.slice(start, text.indexOf('endobj', start)).trim();
}

/**
 * Seals `pdf` with the sandbox's identity (its seal key and TSA, from the PKI directory of a SandboxSeal) in an
 * incremental update, leaving every byte before it as it is: a planted signature stays readable, so the file
 * verifies (the sandbox's own pipeline rewrites the document, which leaves a planted /ByteRange pointing nowhere).
 * A B-T seal as the sandbox makes one: PAdES attributes, no signing-time attribute, a signature time-stamp.
 */
export async function sealIncrementally(pdf: Buffer, pkiDir: string): Promise<Buffer> {
  const pem = (name: string) => readFile(join(pkiDir, name), 'utf8');
  const ca = await pem('ca.pem');
  const sealKey = await pem('seal.key');
  const privateKey = createPrivateKey(sealKey);
  const signer: Issued = {
    cert: parseCertificates(await pem('seal.pem'))[0]!,
    key: { privateKey, publicKey: createPublicKey(privateKey), bits: 3072 },
    chain: parseCertificates(ca),
  };
  const tsa = new TimestampAuthority(
    await loadSigningIdentity({ certificate: await pem('tsa.pem'), privateKey: await pem('tsa.key') }, [ca]),
    TSA_POLICY,
  );

  const doc = await readDoc(pdf);
  const page = doc.getPages()[0]!.ref.objectNumber;
  const formRef = doc.catalog.get(PDFName.of('AcroForm'));
  if (!(formRef instanceof PDFRef)) throw new Error('the form is not an indirect object');
  const form = formRef.objectNumber;
  const size = lastTrailer(pdf).size;
  const [sig, widget] = [size, size + 1];
  const pageBody = objectBody(pdf, page).replace(/\/Annots\s*\[([^\]]*)\]/, `/Annots [$1 ${widget} 0 R]`);
  const formBody = objectBody(pdf, form)
    .replace(/\/Fields\s*\[([^\]]*)\]/, `/Fields [$1 ${widget} 0 R]`)
    .replace(/\/SigFlags\s+\d+/, '/SigFlags 3');
  const now = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const updated = appendUpdate(pdf, [
    {
      num: sig,
      body: `<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /ETSI.CAdES.detached /ByteRange [ 0 /********** /********** /********** ] /Contents <${'0'.repeat(2 * SIGNATURE_BYTES)}> /M (D:${now}Z) /Reason (Signed by every participant) >>`,
    },
    { num: widget, body: `<< /Type /Annot /Subtype /Widget /FT /Sig /Rect [0 0 0 0] /V ${sig} 0 R /T (Seal) /F 4 /P ${page} 0 R >>` },
    { num: page, body: pageBody },
    { num: form, body: formBody },
  ]);
  return place(updated, async (signedBytes) =>
    buildCms({
      signer,
      contentDigest: digest('SHA-256', signedBytes),
      unsigned: async (value) => [signatureTimestampAttribute(await tsa.stamp(digest('SHA-256', value)))],
    }),
  );
}
