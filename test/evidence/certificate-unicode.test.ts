// The certificate of completion prints every name exactly, in any script: read back by poppler's pdftotext
// (which knows nothing of how we chose fonts) from a certificate the sandbox renders and seals.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { chainEvents } from '../../src/esign/audit-chain.js';
import { AUDIT_TRAIL_FORMAT, CHAIN_ALGORITHM, type AuditTrail } from '../../src/esign/evidence.js';
import { renderCompletionCertificate } from '../../packages/sandbox/src/certificate.js';
import { SandboxSeal } from '../../packages/sandbox/src/seal.js';
import { pdfsig, run } from '../support/evidence.js';

const names = {
  'Latin Extended': 'Zoë Łukasiewicz',
  Greek: 'Αλέξανδρος Παπαδόπουλος',
  Cyrillic: 'Юрий Гагарин',
  CJK: '李雷',
  Hebrew: 'דוד כהן',
  Arabic: 'محمد علي',
};

it('prints Latin Extended, Greek, Cyrillic, CJK, Hebrew and Arabic names exactly, with the fonts embedded, and stays sealed', async () => {
  const at = new Date().toISOString();
  const chain = chainEvents('tx-unicode', [{ at, type: 'completed' }]);
  const trail: AuditTrail = {
    format: AUDIT_TRAIL_FORMAT,
    transaction: { id: 'tx-unicode', esignId: 'es-unicode', createdAt: at, completedAt: at },
    participants: Object.values(names).map((name, i) => ({ id: `p${i}`, name, email: `p${i}@example.com`, authentication: [] })),
    documents: [],
    events: chain.events,
    chain: { algorithm: CHAIN_ALGORITHM, head: chain.head },
    seal: { subject: 'CN=esign sandbox document seal', issuer: 'CN=esign sandbox root CA', sha256: 'a'.repeat(64) },
  };
  const seal = await SandboxSeal.open(await mkdtemp(join(tmpdir(), 'esign-unicode-seal-')));
  const sealed = await seal.seal(await renderCompletionCertificate(trail, Buffer.from(JSON.stringify(trail))), 'x', new Date());
  const file = join(await mkdtemp(join(tmpdir(), 'esign-unicode-')), 'certificate.pdf');
  await writeFile(file, sealed);

  const { stdout: text } = await run('pdftotext', ['-enc', 'UTF-8', file, '-']);
  for (const [script, name] of Object.entries(names)) expect({ script, printed: text.includes(name) }).toEqual({ script, printed: true });
  expect(text).not.toContain('?');
  expect(text).not.toContain('\uFFFD');
  // Each font is in the file (a viewer without it shows the same glyphs), and the seal still covers the whole file.
  const { stdout: fonts } = await run('pdffonts', [file]);
  expect(fonts).toMatch(/DejaVuSans-\S+\s+CID TrueType\s+Identity-H\s+yes/);
  expect(fonts).toMatch(/NotoSansSC-Regular-\S+\s+CID TrueType\s+Identity-H\s+yes/);
  expect(await pdfsig(sealed)).toContain('Signature Validation: Signature is Valid.');
});
