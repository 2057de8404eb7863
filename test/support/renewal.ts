// In-process sources for an evidence renewal at a simulated time: a time-stamping authority under its own CA,
// and the OCSP/CRL answers of every CA involved (the HTTP ones are the sandbox's, test/sandbox/sandbox-tsa.test.ts).
import type { RevocationProvider, TimestampAuthority as LibpdfTimestampAuthority } from '@libpdf/core';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as pkijs from 'pkijs';
import { evidenceCheck, type EvidencePolicy } from '../../src/archive/evidence.js';
import type { ArchiveStore } from '../../src/archive/store.js';
import { verifyZip } from '../../src/archive/zip-verify.js';
import { samplePdf } from '../../src/cli/sample-pdf.js';
import type { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { forgeCompletedZip, sha256 } from './evidence.js';
import { createCertificateAuthority, issueSigningCertificate, loadSigningIdentity, type PemKeyPair } from '../../src/evidence/pki.js';
import { RevocationAuthority } from '../../packages/sandbox/src/evidence/revocation.js';
import { TimestampAuthority } from '../../src/evidence/timestamp.js';
import { providerTrust } from '../../src/evidence/trust.js';

export const YEAR = 365 * 24 * 3600 * 1000;

/** A CA made at `from`, lasting `years`, with a TSA certificate it issued lasting `tsaYears`. */
export async function timestampingCa(name: string, from: Date, years: number, tsaYears: number) {
  const ca = await createCertificateAuthority({ CN: `${name} CA` }, from, years);
  const tsaPair = await issueSigningCertificate(ca, { CN: `${name} TSA` }, from, tsaYears, 'time-stamping');
  const tsa = new TimestampAuthority(await loadSigningIdentity(tsaPair, [ca.certificate]), '2.25.1');
  return { ca, tsa, revocation: new RevocationAuthority(await loadSigningIdentity(ca, [])) };
}

/** Renewal sources whose time-stamps and revocation answers are dated `at` (not the machine's clock). */
export function sourcesAt(
  tsa: TimestampAuthority,
  authorities: readonly RevocationAuthority[],
  at: () => Date,
): { timestampAuthority: LibpdfTimestampAuthority; revocationProvider: RevocationProvider } {
  const issuerOf = async (der: Uint8Array) => {
    const cert = pkijs.Certificate.fromBER(der);
    for (const a of authorities) if (await a.issued(cert)) return { a, cert };
    return undefined;
  };
  return {
    timestampAuthority: { timestamp: async (digest) => new Uint8Array(await tsa.stamp(digest, at())) },
    revocationProvider: {
      getOCSP: async (der) => {
        const found = await issuerOf(der);
        return found ? new Uint8Array(await found.a.ocsp(found.cert, at())) : null;
      },
      getCRL: async (der) => {
        const found = await issuerOf(der);
        return found ? new Uint8Array(await found.a.crl(at())) : null;
      },
    },
  };
}

/** A completed ZIP sealed by `seal`, verified under `require` and committed as the archive activity does. */
export async function archiveSealedBy(store: ArchiveStore, work: string, seal: SandboxSeal, key: string): Promise<void> {
  const original = Buffer.from(await samplePdf(`Contract ${key}`));
  const zip = await forgeCompletedZip({
    seal,
    transaction: { id: key, esignId: `es-${key}` },
    documents: [{ title: 'Contract', StoragePath: `uploads/${key}.pdf`, original }],
  });
  const file = join(work, `${key}.zip`);
  await writeFile(file, zip);
  const policy: EvidencePolicy = {
    signatures: 'require',
    trust: providerTrust(seal),
    requireCompletionCertificate: true,
  };
  const check = evidenceCheck(
    {
      transactionId: key,
      esignId: `es-${key}`,
      documents: [{ title: 'Contract', StoragePath: `uploads/${key}.pdf`, sha256: sha256(original) }],
    },
    policy,
  );
  const files = await verifyZip(file, undefined, check.inspector);
  const now = new Date().toISOString();
  await store.commit(key, file, {
    referenceId: key,
    transactionId: key,
    esignId: `es-${key}`,
    zip: { name: 'completed.zip', bytes: zip.length, sha256: sha256(zip) },
    documents: [{ title: 'Contract', StoragePath: `uploads/${key}.pdf`, sha256: sha256(original) }],
    files,
    evidence: check.conclude(files),
    downloadedAt: now,
    archivedAt: now,
  });
}

export type { PemKeyPair };
