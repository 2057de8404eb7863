// The full read of a PDF that templates (when one is created) and the provider sandbox (on an upload) both apply: the
// header alone (`isPdfHead`, what the worker checks on every source) says nothing of whether the file can be opened.
import { PDFDocument } from 'pdf-lib';
import { isPdfHead } from './documents.js';

export class InvalidPdfError extends Error {
  override readonly name = 'InvalidPdfError';
}

/** Parses a PDF fully (not just its header) and returns each page's size in points. */
export async function inspectPdf(bytes: Uint8Array): Promise<{ pageSizes: [number, number][] }> {
  if (bytes.length < 8 || !isPdfHead(bytes)) throw new InvalidPdfError('not a PDF (missing %PDF- header)');
  let pages;
  try {
    const doc = await PDFDocument.load(bytes, { updateMetadata: false, throwOnInvalidObject: true });
    pages = doc.getPages(); // walks the page tree: a PDF without one fails here
  } catch (err) {
    throw new InvalidPdfError(`not a readable PDF: ${(err as Error).message.split('\n')[0]}`);
  }
  if (pages.length === 0) throw new InvalidPdfError('the PDF has no pages');
  return { pageSizes: pages.map((p) => [p.getWidth(), p.getHeight()] as [number, number]) };
}
