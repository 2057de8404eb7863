import { PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import type { Tag } from '../../../src/esign/schemas.js';
import { drawText, textWidth, UnicodeFonts } from './unicode-text.js';

export interface StampedTag {
  tag: Tag;
  value: string;
}

const SIGNATURE_TYPES = new Set<Tag['type']>([
  'SIGNATURETEMPLATE',
  'SIGNHERETAGTEMPLATEANNOTATION',
  'INITIALSTEMPLATE',
  'INITIALHERETAGTEMPLATEANNOTATION',
]);

/** Draws each applied value inside its tag's box on its page; returns the new PDF. */
export async function stampPdf(original: Uint8Array, stamps: readonly StampedTag[]): Promise<Uint8Array> {
  const doc = await PDFDocument.load(original, { updateMetadata: false });
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const script = await doc.embedFont(StandardFonts.TimesRomanItalic);
  // The standard fonts know WinAnsi only: a value with any other character (a merge value such as "Łódź", a name
  // in another script) is drawn with the embedded Unicode fonts instead of failing the whole completion.
  const winAnsi = new Set(regular.getCharacterSet());
  const encodable = (text: string) => [...text].every((c) => winAnsi.has(c.codePointAt(0)!));
  const others = stamps.map((s) => s.value).filter((v) => !encodable(v));
  const unicode = others.length > 0 ? await UnicodeFonts.embed(doc, others) : undefined;
  const pages = doc.getPages();
  for (const { tag, value } of stamps) {
    const page = pages[tag.page];
    if (!page) continue; // validated at create; a replaced document may have fewer pages
    const font = SIGNATURE_TYPES.has(tag.type) ? script : regular;
    const face = encodable(value) ? undefined : unicode!.regular;
    const size = fitFontSize((text, at) => (face ? textWidth(text, face, at) : font.widthOfTextAtSize(text, at)), value, tag);
    page.drawRectangle({
      x: tag.x,
      y: tag.y,
      width: tag.width,
      height: tag.height,
      borderColor: rgb(0.1, 0.3, 0.7),
      borderWidth: 0.75,
    });
    const at = { x: tag.x + 2, y: tag.y + Math.max(1, (tag.height - size) / 2), size, color: rgb(0.05, 0.1, 0.4) };
    if (face) drawText(page, value, { ...at, face });
    else page.drawText(value, { ...at, font });
  }
  return doc.save({ useObjectStreams: false });
}

function fitFontSize(widthAt: (text: string, size: number) => number, text: string, tag: Tag): number {
  let size = tag.fontSize ?? Math.min(tag.height * 0.7, 18);
  while (size > 4 && widthAt(text, size) > tag.width - 4) size -= 0.5;
  return size;
}
