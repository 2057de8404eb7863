import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sealPdf } from '../evidence/pades-sign.js';
import {
  createCertificateAuthority,
  issueSigningCertificate,
  loadSigningIdentity,
  summarize,
  type CertificateSummary,
  type PemKeyPair,
  type SigningIdentity,
} from '../evidence/pki.js';

/**
 * The sandbox's seal: a root CA generated on first start, and a
 * document-signing certificate it issued, kept as PEM in the data directory
 * (keys 0600) so every restart seals with the same identity. Clients trust
 * the CA from `GET /sandbox/ca.pem`.
 */
export class SandboxSeal {
  readonly caCertificate: string;
  readonly certificate: CertificateSummary;
  readonly #identity: SigningIdentity;

  private constructor(caCertificate: string, identity: SigningIdentity) {
    this.caCertificate = caCertificate;
    this.#identity = identity;
    this.certificate = summarize(identity.certificate);
  }

  static async open(dir: string): Promise<SandboxSeal> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const ca = await loadOrCreate(dir, 'ca', () => createCertificateAuthority({ O: 'esign sandbox', CN: 'esign sandbox root CA' }));
    const signer = await loadOrCreate(dir, 'seal', () =>
      issueSigningCertificate(ca, { O: 'esign sandbox', CN: 'esign sandbox document seal' }),
    );
    return new SandboxSeal(ca.certificate, await loadSigningIdentity(signer, [ca.certificate]));
  }

  /** Seals a finished PDF (PAdES B-B, invisible signature over the whole file). */
  seal(pdf: Uint8Array, reason: string, signingTime: Date): Promise<Buffer> {
    return sealPdf(pdf, this.#identity, { reason, location: 'esign provider sandbox', contactInfo: 'sandbox', signingTime });
  }
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
  await writeFile(`${keyPath}.tmp`, pair.privateKey, { mode: 0o600 });
  await rename(`${keyPath}.tmp`, keyPath);
  await writeFile(`${certPath}.tmp`, pair.certificate);
  await rename(`${certPath}.tmp`, certPath);
  return pair;
}
