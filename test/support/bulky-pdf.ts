import { randomBytes } from 'node:crypto';
import { PDFDocument, PDFName } from 'pdf-lib';
import { samplePdf } from '../../src/cli/sample-pdf.js';

/**
 * A PDF of about `bytes`: one page and an incompressible stream the catalog
 * points at, so a seal covers real bytes. The stream is stored raw (no
 * /Filter): building a 256 MiB document does not wait for a deflate in
 * JavaScript, and the PDF is as large on the wire as it says.
 */
export async function bulkyPdf(bytes: number): Promise<Buffer> {
  const doc = await PDFDocument.load(await samplePdf('Agreement'));
  if (bytes > 0) doc.catalog.set(PDFName.of('BenchAnnex'), doc.context.register(doc.context.stream(randomBytes(bytes))));
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}
