import { AFRelationship, PDFDocument, rgb, type PDFPage } from 'pdf-lib';
import { AUDIT_TRAIL_ENTRY, type AuditTrail } from '../../../src/esign/evidence.js';
import { drawText, textWidth, UnicodeFonts, type Face } from './unicode-text.js';

const PAGE: [number, number] = [595.28, 841.89]; // A4
const MARGIN = 48;

/**
 * The certificate of completion: a human-readable rendering of the audit
 * trail (participants, documents with their hashes, every event, the chain's
 * head) with the trail itself, `trailBytes` exactly, as an embedded file
 * (`audit-trail.json`, AFRelationship Source); the completion pipeline then
 * seals it like the documents, which seals the trail too.
 */
export async function renderCompletionCertificate(trail: AuditTrail, trailBytes: Uint8Array): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle('Certificate of completion');
  doc.setProducer('esign provider sandbox');
  doc.setCreationDate(new Date(trail.transaction.completedAt));
  doc.setModificationDate(new Date(trail.transaction.completedAt));
  // Every name as written, in any script: the fonts are chosen per character (./unicode-text.ts).
  const fonts = await UnicodeFonts.embed(doc, textsOf(trail));
  const { regular: font, bold, mono } = fonts;
  let page: PDFPage = doc.addPage(PAGE);
  let y = PAGE[1] - MARGIN;
  const names = new Map(trail.participants.map((p) => [p.id, p.name]));

  const line = (text: string, options: { f?: Face; size?: number; indent?: number; gap?: number } = {}) => {
    const size = options.size ?? 9;
    const f = options.f ?? font;
    const width = PAGE[0] - 2 * MARGIN - (options.indent ?? 0);
    for (const chunk of wrap(text, f, size, width)) {
      if (y < MARGIN + size) {
        page = doc.addPage(PAGE);
        y = PAGE[1] - MARGIN;
      }
      drawText(page, chunk, { x: MARGIN + (options.indent ?? 0), y, size, face: f, color: rgb(0.1, 0.1, 0.1) });
      y -= size + 3;
    }
    y -= options.gap ?? 0;
  };

  line('Certificate of completion', { f: bold, size: 18, gap: 6 });
  line(`Transaction ${trail.transaction.id} (envelope ${trail.transaction.esignId})`);
  line(`Created ${trail.transaction.createdAt}; completed ${trail.transaction.completedAt}`, { gap: 8 });

  line('Participants', { f: bold, size: 12, gap: 2 });
  for (const p of trail.participants) {
    line(`${p.name} <${p.email}>  id ${p.id}`);
    line(`Authentication: ${p.authentication.length > 0 ? p.authentication.join(', ') : 'none'}`, { indent: 12 });
  }
  y -= 8;

  line('Documents', { f: bold, size: 12, gap: 2 });
  for (const d of trail.documents) {
    line(`${d.index + 1}. ${d.title}  (${d.entry})`);
    line(`original  ${d.original.sha256}  ${d.original.bytes} bytes`, { f: mono, size: 7.5, indent: 12 });
    line(`final     ${d.final.sha256}  ${d.final.bytes} bytes`, { f: mono, size: 7.5, indent: 12 });
  }
  y -= 8;

  line('Events', { f: bold, size: 12, gap: 2 });
  for (const e of trail.events) {
    const who = e.participantId ? ` ${names.get(e.participantId) ?? e.participantId}` : '';
    const detail = e.detail
      ? `  ${Object.entries(e.detail)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(' ')}`
      : '';
    line(`${e.at}  ${e.type}${who}${detail}`);
    if (e.ip || e.userAgent) line(`from ${e.ip ?? 'unknown address'}${e.userAgent ? `, ${e.userAgent}` : ''}`, { indent: 12, size: 7.5 });
  }
  y -= 8;

  line('Seal', { f: bold, size: 12, gap: 2 });
  line(`Documents and this certificate are sealed (PAdES) by ${trail.seal.subject}, issued by ${trail.seal.issuer}.`);
  line(`Certificate SHA-256 ${trail.seal.sha256}`, { f: mono, size: 7.5 });
  if (trail.timestampAuthority) {
    line(`Each seal is time-stamped (RFC 3161) by ${trail.timestampAuthority.subject}, issued by ${trail.timestampAuthority.issuer}.`);
    line(`Certificate SHA-256 ${trail.timestampAuthority.sha256}`, { f: mono, size: 7.5 });
  }
  if (trail.chain) {
    line('Audit trail', { f: bold, size: 12, gap: 2 });
    line(`Every event above names the hash of the one before it (${trail.chain.algorithm}); the last hash is`);
    line(trail.chain.head, { f: mono, size: 7.5 });
  }
  line(`The same record, machine-readable: audit-trail.json, embedded in this sealed file and in the same ZIP.`);
  await doc.attach(trailBytes, AUDIT_TRAIL_ENTRY, {
    mimeType: 'application/json',
    description: 'The audit trail this certificate renders (esign-audit-trail/v2)',
    creationDate: new Date(trail.transaction.completedAt),
    modificationDate: new Date(trail.transaction.completedAt),
    afRelationship: AFRelationship.Source,
  });
  return doc.save({ useObjectStreams: false });
}

/** Every string the certificate prints from the trail, so the fonts they need are embedded. */
function textsOf(trail: AuditTrail): string[] {
  return [
    ...trail.participants.flatMap((p) => [p.name, p.email]),
    ...trail.documents.flatMap((d) => [d.title, d.entry]),
    ...trail.events.flatMap((e) => [e.userAgent ?? '', ...Object.values(e.detail ?? {}).map(String)]),
    trail.seal.subject,
    trail.seal.issuer,
  ];
}

function wrap(text: string, font: Face, size: number, width: number): string[] {
  const lines: string[] = [];
  let current = '';
  let currentWidth = 0;
  // Word by word, adding each word's width (a space breaks shaping, so the sum is the line's width): measuring the
  // growing line again for every word made a long paragraph quadratic.
  for (const word of text.split(' ')) {
    const added = textWidth(current ? ` ${word}` : word, font, size);
    if (currentWidth + added <= width || !current) {
      current = current ? `${current} ${word}` : word;
      currentWidth += added;
    } else {
      lines.push(current);
      current = word;
      currentWidth = textWidth(word, font, size);
    }
  }
  lines.push(current);
  return lines;
}
