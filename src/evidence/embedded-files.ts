import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFRawStream, PDFString } from 'pdf-lib';

/**
 * The bytes of the file embedded in `pdf` under `name` (the document's
 * EmbeddedFiles name tree, PDF 32000 7.11.4), decoded; null when it holds no
 * such file. Throws on a PDF it cannot read. Only the name tree's first level
 * (a flat /Names array) is read: the sandbox and pdf-lib write it that way,
 * and a file found nowhere is refused by the caller rather than searched for.
 */
export async function embeddedFile(pdf: Uint8Array, name: string): Promise<Buffer | null> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false, throwOnInvalidObject: true });
  const names = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict);
  const tree = names?.lookupMaybe(PDFName.of('EmbeddedFiles'), PDFDict);
  const list = tree?.lookupMaybe(PDFName.of('Names'), PDFArray);
  if (!list) return null;
  for (let i = 0; i + 1 < list.size(); i += 2) {
    const key = list.lookup(i);
    if (!(key instanceof PDFString || key instanceof PDFHexString) || key.decodeText() !== name) continue;
    const spec = list.lookup(i + 1, PDFDict);
    const stream = spec.lookupMaybe(PDFName.of('EF'), PDFDict)?.lookup(PDFName.of('F'));
    if (!(stream instanceof PDFRawStream)) return null;
    return Buffer.from(decodePDFRawStream(stream).decode());
  }
  return null;
}
