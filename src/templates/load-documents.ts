/**
 * A definition's documents read from disk at create time: each must be a PDF whose pages hold its tags, so a
 * template that exists can always be sent. Every problem of every document is reported at once.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { inspectPdf } from '../storage/pdf-inspect.js';
import type { TemplateTag } from './definition.js';

/** The provider's upload limit (docs/spec-gaps.md row 21) and the worker's default. */
export const MAX_TEMPLATE_DOCUMENT_BYTES = 25 * 1024 * 1024;

export interface LoadedDocument {
  sha256: string;
  bytes: Buffer;
}

export async function loadDocuments(
  documents: readonly { path: string; tags: readonly TemplateTag[] }[],
  baseDir: string,
  problems: { path: string; message: string }[],
): Promise<LoadedDocument[]> {
  const loaded: LoadedDocument[] = [];
  for (const [i, d] of documents.entries()) {
    const at = `documents[${i}].path`;
    const file = resolve(baseDir, d.path);
    const size = await stat(file).then(
      (s) => (s.isFile() ? s.size : undefined),
      () => undefined,
    );
    if (size === undefined) {
      problems.push({ path: at, message: `no file ${file}` });
      continue;
    }
    if (size === 0 || size > MAX_TEMPLATE_DOCUMENT_BYTES) {
      problems.push({ path: at, message: `${file} is ${size} bytes: a document must hold 1 to ${MAX_TEMPLATE_DOCUMENT_BYTES} bytes` });
      continue;
    }
    const bytes = await readFile(file);
    let pageSizes: [number, number][];
    try {
      ({ pageSizes } = await inspectPdf(bytes));
    } catch (err) {
      problems.push({ path: at, message: `${file}: ${(err as Error).message}` });
      continue;
    }
    d.tags.forEach((t, ti) => {
      const page = pageSizes[t.page];
      const where = `documents[${i}].tags[${ti}]`;
      if (!page)
        problems.push({ path: `${where}.page`, message: `page ${t.page} is beyond the PDF's ${pageSizes.length} (pages count from 0)` });
      else if (t.x + t.width > page[0] || t.y + t.height > page[1]) {
        problems.push({ path: where, message: `the tag's box ends outside page ${t.page} (${page[0]} × ${page[1]} points)` });
      }
    });
    loaded.push({ sha256: createHash('sha256').update(bytes).digest('hex'), bytes });
  }
  return loaded;
}
