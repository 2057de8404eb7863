import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { ZipFile } from 'yazl';

export interface ZipEntrySpec {
  name: string;
  data: Buffer;
  mode?: number;
  compress?: boolean;
}

/** Writes a ZIP of the given entries (mode 0o120777 makes a symbolic link). */
export async function writeZip(path: string, entries: ZipEntrySpec[]): Promise<string> {
  const zip = new ZipFile();
  for (const e of entries) zip.addBuffer(e.data, e.name, { mode: e.mode ?? 0o100644, compress: e.compress ?? false });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
  return path;
}

/** Renames an entry in place (local header and central directory), to names yazl itself refuses to write. */
export async function renameZipEntry(path: string, from: string, to: string): Promise<void> {
  if (Buffer.byteLength(from) !== Buffer.byteLength(to)) throw new Error('renameZipEntry: names must have the same length');
  const bytes = await readFile(path);
  await writeFile(path, Buffer.from(bytes.toString('latin1').split(from).join(to), 'latin1'));
}

/** Reads every entry of a ZIP file into memory (test helper for small archives). */
export async function readZipEntries(path: string): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, z) => (err ? reject(err) : resolve(z))),
  );
  const entries = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('error', reject);
        stream.on('end', () => {
          entries.set(entry.fileName, Buffer.concat(chunks));
          zip.readEntry();
        });
      });
    });
    zip.on('end', () => resolve());
    zip.on('error', reject);
    zip.readEntry();
  });
  return entries;
}

/** Text of each page of a PDF, extracted by an independent parser (pdf.js). */
export async function pdfPageTexts(bytes: Uint8Array): Promise<string[]> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await pdfjs.getDocument({ data: new Uint8Array(bytes), useSystemFonts: false, isEvalSupported: false, verbosity: 0 }).promise;
  const texts: string[] = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const page = await doc.getPage(i);
    const content = await page.getTextContent();
    texts.push(content.items.map((item) => ('str' in item ? item.str : '')).join(' '));
  }
  await doc.destroy();
  return texts;
}
