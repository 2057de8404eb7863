import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import fontkit from '@pdf-lib/fontkit';
import type { PDFDocument, PDFFont, PDFPage, RGB } from 'pdf-lib';

/**
 * Text in any script on a pdf-lib page, so the certificate of completion
 * prints every name exactly: DejaVu (Latin with its extensions, Greek,
 * Cyrillic, Hebrew, Arabic) first, then Noto Sans SC for CJK, chosen per
 * character; both are embedded as subsets. Shaping (Arabic joining) and the
 * right-to-left order within a run are fontkit's, through pdf-lib; a line
 * mixing directions is laid out run by run in logical order (no full UAX #9).
 * A character neither font has is drawn as U+FFFD, never dropped.
 */
const require = createRequire(import.meta.url);
const FONT_FILES = {
  regular: 'dejavu-fonts-ttf/ttf/DejaVuSans.ttf',
  bold: 'dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf',
  mono: 'dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf',
  cjk: '@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf',
} as const;
type FontName = keyof typeof FONT_FILES;

const cache = new Map<FontName, Promise<Uint8Array>>();
function fontBytes(name: FontName): Promise<Uint8Array> {
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = readFile(require.resolve(FONT_FILES[name]));
    cache.set(name, bytes);
  }
  return bytes;
}

/**
 * fontkit, parsing each font file once per process: pdf-lib asks it to parse the file for every document it embeds
 * the font in, and parsing its tables (and the glyphs and layout lookups it then caches on the font) was most of what
 * a certificate cost. The font is only read, never changed: each document still embeds its own subset of it.
 */
const parsed = new WeakMap<Uint8Array, ReturnType<typeof fontkit.create>>();
const parsedOnce: typeof fontkit = {
  create(bytes, postscriptName) {
    if (postscriptName !== undefined) return fontkit.create(bytes, postscriptName);
    let font = parsed.get(bytes);
    if (!font) parsed.set(bytes, (font = fontkit.create(bytes)));
    return font;
  },
};

/** One face and the faces that stand in for characters it lacks. */
export interface Face {
  fonts: { font: PDFFont; has: Set<number> }[];
}

export class UnicodeFonts {
  private constructor(
    readonly regular: Face,
    readonly bold: Face,
    readonly mono: Face,
  ) {}

  /** Embeds the fonts `texts` need into `doc` (the CJK face only when some text needs it). */
  static async embed(doc: PDFDocument, texts: Iterable<string>): Promise<UnicodeFonts> {
    doc.registerFontkit(parsedOnce);
    const load = async (name: FontName) => {
      const font = await doc.embedFont(await fontBytes(name), { subset: true });
      fileOf.set(font, name);
      return { font, has: new Set(font.getCharacterSet()) };
    };
    const [regular, bold, mono] = await Promise.all([load('regular'), load('bold'), load('mono')]);
    const needsCjk = [...texts].some((t) => [...t].some((c) => !regular.has.has(c.codePointAt(0)!)));
    const cjk = needsCjk ? await load('cjk') : undefined;
    const face = (first: { font: PDFFont; has: Set<number> }): Face => ({ fonts: cjk ? [first, regular, cjk] : [first, regular] });
    return new UnicodeFonts(face(regular), face(bold), face(mono));
  }
}

const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF]/u;
const NEUTRAL = /[\s\p{P}\p{S}]/u;

/**
 * Per character, whether it belongs to a right-to-left run: Hebrew and Arabic letters, and the spaces and
 * punctuation between two of them. fontkit lays out (and reverses) each run by the script it finds in it, so a run
 * must never mix directions: "דוד כהן <d@example.com>" is drawn as the name, right to left, then the address.
 */
function rightToLeft(chars: string[]): boolean[] {
  const strong = chars.map((c) => (RTL.test(c) ? 'r' : NEUTRAL.test(c) ? null : 'l'));
  return chars.map((_, i) => {
    if (strong[i]) return strong[i] === 'r';
    const before = strong.slice(0, i).findLast((d) => d !== null);
    const after = strong.slice(i + 1).find((d) => d !== null);
    return before === 'r' && after === 'r';
  });
}

/** The text split into runs of one font and one direction, in logical order. */
function runs(text: string, face: Face): { text: string; font: PDFFont }[] {
  const out: { text: string; font: PDFFont; rtl: boolean }[] = [];
  const chars = [...text];
  const rtl = rightToLeft(chars);
  for (const [i, char] of chars.entries()) {
    const cp = char.codePointAt(0)!;
    const found = face.fonts.find((f) => f.has.has(cp));
    const font = found?.font ?? face.fonts[0]!.font;
    const drawn = found ? char : '\uFFFD';
    const last = out.at(-1);
    if (last && last.font === font && last.rtl === rtl[i]) last.text += drawn;
    else out.push({ text: drawn, font, rtl: rtl[i]! });
  }
  return out;
}

/**
 * Widths at size 1, per font file: laying text out through fontkit is the certificate's main cost, and words repeat
 * across certificates (labels, dates, names), while a document's embedded font is new for each one. A width
 * depends only on the font file and the text, so one table per file serves every document the process draws.
 */
const fileOf = new WeakMap<PDFFont, FontName>();
const widths = new Map<FontName, Map<string, number>>();

function unitWidth(font: PDFFont, text: string): number {
  const file = fileOf.get(font)!;
  let known = widths.get(file);
  if (!known) widths.set(file, (known = new Map<string, number>()));
  let width = known.get(text);
  if (width === undefined) {
    width = font.widthOfTextAtSize(text, 1);
    if (known.size < 10_000) known.set(text, width);
  }
  return width;
}

export function textWidth(text: string, face: Face, size: number): number {
  return runs(text, face).reduce((w, r) => w + unitWidth(r.font, r.text) * size, 0);
}

export function drawText(page: PDFPage, text: string, at: { x: number; y: number; size: number; face: Face; color: RGB }): void {
  let x = at.x;
  for (const r of runs(text, at.face)) {
    page.drawText(r.text, { x, y: at.y, size: at.size, font: r.font, color: at.color });
    x += unitWidth(r.font, r.text) * at.size;
  }
}
