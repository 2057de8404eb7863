// The map of workflows/ in workflows/README.md (its `| File | Holds |` table) against the tree: every file under
// workflows/ (subfolders included, the README aside) is named in the map's first column, and every file the map
// names exists. A file added, moved or removed without its line in the map fails here. Text only: no server.
// (activities/ has no per-file map; docs/architecture.md's paths are test/docs/architecture-doc.test.ts's.)
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** Every file under `dir`, as a path relative to it with `/` between segments. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

/** The table that starts with `header` in `markdown`: its rows' first cells, each as the code spans it holds. */
function mapOf(markdown: string, header: RegExp): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => header.test(line));
  if (start === -1) throw new Error(`no table headed ${String(header)}`);
  const names: string[] = [];
  // The header, then the delimiter row, then rows until the first line that is not one.
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const first = line.split('|')[1] ?? '';
    names.push(...[...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  }
  return names;
}

describe('workflows/README.md, its map', () => {
  const folder = join(root, 'workflows');
  const named = mapOf(readFileSync(join(folder, 'README.md'), 'utf8'), /^\|\s*File\s*\|\s*Holds\s*\|/);
  const files = filesUnder(folder).filter((file) => file !== 'README.md');

  it('is a table of files', () => {
    expect(named.length).toBeGreaterThan(0);
  });

  it('names every file under workflows/', () => {
    expect(files.filter((file) => !named.includes(file))).toEqual([]);
  });

  it('names only files that exist, each once', () => {
    expect(named.filter((name) => !files.includes(name))).toEqual([]);
    expect(named.filter((name, i) => named.indexOf(name) !== i)).toEqual([]);
  });
});
