import { rename, rm } from 'node:fs/promises';
import { ZipFile } from 'yazl';
import { writeHashed, type WrittenFile } from '../../../src/util/streams.js';
import { nameKey } from '../../../src/archive/zip-verify.js';

export interface ZipEntry {
  name: string;
  path: string;
}

/**
 * Writes a ZIP of files on disk to `target` atomically (temp file, then rename)
 * and returns its size and SHA-256. Entries are stored uncompressed (PDFs
 * compress their own streams) with a fixed date, so the same inputs give the
 * same bytes.
 */
export async function writeZip(entries: readonly ZipEntry[], target: string): Promise<WrittenFile> {
  const zip = new ZipFile();
  const mtime = new Date(Date.UTC(2020, 0, 1));
  for (const entry of entries) zip.addFile(entry.path, entry.name, { compress: false, mtime, mode: 0o100644 });
  zip.end();
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    const written = await writeHashed(zip.outputStream, tmp);
    await rename(tmp, target);
    return written;
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Names a file safely inside a ZIP: no directories, no control characters, unique. */
export function zipEntryName(title: string, index: number, taken: Set<string>): string {
  const base =
    title
      // eslint-disable-next-line no-control-regex -- control characters are exactly what must go
      .replace(/[\\/:*?"<>|\u0000-\u001f]+/g, '_')
      .replace(/^\.+/, '')
      .trim()
      .slice(0, 120) || `document-${index + 1}`;
  let name = base.toLowerCase().endsWith('.pdf') ? base : `${base}.pdf`;
  // Unique as the archive judges names (case-folded, NFC): "Straße" and "STRASSE" would be one file on its disk.
  for (let n = 2; taken.has(nameKey(name)); n++) name = name.replace(/(?: \(\d+\))?\.pdf$/i, ` (${n}).pdf`);
  taken.add(nameKey(name));
  return name;
}
