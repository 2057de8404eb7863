import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { crc32, deflateRawSync } from 'node:zlib';
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

/** The fields a local header and a central directory record both carry, which must agree. */
export interface ZipRecordFields {
  /** Written as UTF-8. */
  name: string;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
}

/** One entry of a ZIP written record by record (`buildZip`), and how its records may be made to lie. */
export interface RawZipEntry {
  name: string;
  data: Buffer;
  compress?: boolean;
  /** Flag bit 3: the CRC-32 and sizes in a data descriptor after the data (and zeros in the local header). */
  descriptor?: boolean;
  mode?: number;
  /** Bytes written just before this entry's local header (the directory's offsets count them). */
  before?: Buffer;
  /** Left out of the central directory: only a reader that walks the local headers sees it. */
  hidden?: boolean;
  /** Listed a second time in the central directory, under this name, pointing at the same local entry. */
  listedAgainAs?: string;
  /** Changes to the local header alone (what a sequential extractor reads). */
  local?: Partial<ZipRecordFields>;
  /** Changes to the central directory record alone. */
  central?: Partial<ZipRecordFields>;
  /** Changes to the data descriptor alone. */
  descriptorFields?: Partial<Pick<ZipRecordFields, 'crc' | 'compressedSize' | 'uncompressedSize'>>;
  /** Written in place of the data descriptor (empty: none, though the flags say one follows). */
  descriptorRecord?: Buffer;
  /** Written in place of the entry's data (the CRC-32 still describes `data`, the sizes these bytes). */
  body?: Buffer;
}

export interface RawZipOptions {
  /** Bytes between the last entry and the central directory (its offset counts them). */
  beforeDirectory?: Buffer;
  /** The end record's comment. */
  comment?: Buffer;
  /** Bytes after the end record, which no length announces. */
  trailer?: Buffer;
}

const UTF8_FLAG = 0x800;
const DESCRIPTOR_FLAG = 0x8;
/** 2020-01-01 00:00 in MS-DOS time and date. */
const DOS_TIME = 0;
const DOS_DATE = ((2020 - 1980) << 9) | (1 << 5) | 1;

/**
 * Writes a ZIP record by record, as a hostile provider could: entries hidden from the central directory or
 * listed twice, bytes before, between and after them, local headers and data descriptors that say otherwise
 * than the directory. With no changes asked for, it is a plain ZIP (UTF-8 names, as yazl writes them).
 */
export function buildZip(entries: RawZipEntry[], options: RawZipOptions = {}): Buffer {
  const parts: Buffer[] = [];
  const records: Buffer[] = [];
  let offset = 0;
  const push = (bytes: Buffer) => {
    parts.push(bytes);
    offset += bytes.length;
  };
  for (const entry of entries) {
    if (entry.before) push(entry.before);
    const body = entry.body ?? (entry.compress ? deflateRawSync(entry.data) : entry.data);
    const real: ZipRecordFields = {
      name: entry.name,
      flags: UTF8_FLAG | (entry.descriptor ? DESCRIPTOR_FLAG : 0),
      method: entry.compress ? 8 : 0,
      crc: crc32(entry.data),
      compressedSize: body.length,
      uncompressedSize: entry.data.length,
    };
    const at = offset;
    const sizesAfter = entry.descriptor ? { crc: 0, compressedSize: 0, uncompressedSize: 0 } : {};
    push(localHeader({ ...real, ...sizesAfter, ...entry.local }));
    push(body);
    if (entry.descriptor) push(entry.descriptorRecord ?? dataDescriptor({ ...real, ...entry.descriptorFields }));
    if (entry.hidden) continue;
    const mode = entry.mode ?? 0o100644;
    records.push(centralRecord({ ...real, ...entry.central }, at, mode));
    if (entry.listedAgainAs !== undefined) records.push(centralRecord({ ...real, ...entry.central, name: entry.listedAgainAs }, at, mode));
  }
  if (options.beforeDirectory) push(options.beforeDirectory);
  const directoryOffset = offset;
  const directory = Buffer.concat(records);
  push(directory);
  const comment = options.comment ?? Buffer.alloc(0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(records.length, 8);
  end.writeUInt16LE(records.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(directoryOffset, 16);
  end.writeUInt16LE(comment.length, 20);
  push(end);
  push(comment);
  if (options.trailer) push(options.trailer);
  return Buffer.concat(parts);
}

/** `buildZip`, written to `path`. */
export async function writeRawZip(path: string, entries: RawZipEntry[], options?: RawZipOptions): Promise<string> {
  await writeFile(path, buildZip(entries, options));
  return path;
}

function localHeader(fields: ZipRecordFields): Buffer {
  const name = Buffer.from(fields.name);
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(fields.flags, 6);
  header.writeUInt16LE(fields.method, 8);
  header.writeUInt16LE(DOS_TIME, 10);
  header.writeUInt16LE(DOS_DATE, 12);
  header.writeUInt32LE(fields.crc >>> 0, 14);
  header.writeUInt32LE(fields.compressedSize, 18);
  header.writeUInt32LE(fields.uncompressedSize, 22);
  header.writeUInt16LE(name.length, 26);
  header.writeUInt16LE(0, 28);
  return Buffer.concat([header, name]);
}

function dataDescriptor(fields: Pick<ZipRecordFields, 'crc' | 'compressedSize' | 'uncompressedSize'>): Buffer {
  const descriptor = Buffer.alloc(16);
  descriptor.writeUInt32LE(0x08074b50, 0);
  descriptor.writeUInt32LE(fields.crc >>> 0, 4);
  descriptor.writeUInt32LE(fields.compressedSize, 8);
  descriptor.writeUInt32LE(fields.uncompressedSize, 12);
  return descriptor;
}

function centralRecord(fields: ZipRecordFields, offset: number, mode: number): Buffer {
  const name = Buffer.from(fields.name);
  const record = Buffer.alloc(46);
  record.writeUInt32LE(0x02014b50, 0);
  record.writeUInt16LE((3 << 8) | 63, 4);
  record.writeUInt16LE(20, 6);
  record.writeUInt16LE(fields.flags, 8);
  record.writeUInt16LE(fields.method, 10);
  record.writeUInt16LE(DOS_TIME, 12);
  record.writeUInt16LE(DOS_DATE, 14);
  record.writeUInt32LE(fields.crc >>> 0, 16);
  record.writeUInt32LE(fields.compressedSize, 20);
  record.writeUInt32LE(fields.uncompressedSize, 24);
  record.writeUInt16LE(name.length, 28);
  record.writeUInt32LE((mode << 16) >>> 0, 38);
  record.writeUInt32LE(offset, 42);
  return Buffer.concat([record, name]);
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
