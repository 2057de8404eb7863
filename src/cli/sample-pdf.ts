import { PDFDocument, StandardFonts } from 'pdf-lib';

/** A small, valid PDF with readable text on each page: for demos, tests and benchmarks. */
export async function samplePdf(title: string, pageCount = 1): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle(title);
  doc.setCreationDate(new Date(0));
  doc.setModificationDate(new Date(0));
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < pageCount; i++) {
    const page = doc.addPage([612, 792]);
    page.drawText(title, { x: 72, y: 720, size: 20, font });
    page.drawText(`Page ${i + 1} of ${pageCount}. Sample agreement text for the e-signature sandbox.`, {
      x: 72,
      y: 690,
      size: 11,
      font,
    });
    page.drawText('Signature:', { x: 72, y: 160, size: 11, font });
    page.drawText('Date:', { x: 340, y: 160, size: 11, font });
  }
  return doc.save();
}
