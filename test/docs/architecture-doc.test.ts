// docs/architecture.md against the tree: every backticked repository path exists, and every name it pins to a file
// (`path` `name`, or `path` `Class.member`, further names after ", ") is defined or exported there, so the page fails
// this test the moment a file it names is renamed or a function it names is removed. Text only: no server.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const PAGE = 'docs/architecture.md';

interface Span {
  text: string;
  start: number;
  end: number;
}

interface Pinned {
  path: string;
  name: string;
}

/** The inline code spans of a Markdown text, fenced blocks left out. */
function codeSpans(markdown: string): Span[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, (block) => ' '.repeat(block.length));
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => ({ text: m[1]!, start: m.index, end: m.index + m[0].length }));
}

const FILE_LIKE = /\.(ts|js|cjs|mjs|md|json|ya?ml|sh|csv|pdf)$/;

/**
 * Whether a span is a repository path: it has a slash and starts at an entry of the repository's root (`src/…`,
 * `docs/…`), or it is a bare file name (`package.json`), which must then be at the root.
 */
function isPath(text: string, base: string): boolean {
  if (/\s/.test(text) || text.startsWith('.') || text.startsWith('/')) return false;
  if (text.includes('/')) return existsSync(join(base, text.split('/')[0]!)) && !text.startsWith('@');
  return FILE_LIKE.test(text) || text === 'Dockerfile';
}

/** A path exists; `<placeholder>` and `*` segments are checked up to the segment before them. */
function pathExists(text: string, base: string): boolean {
  const segments = text.replace(/\/$/, '').split('/');
  const fixed = segments.findIndex((s) => /[<*]/.test(s));
  return existsSync(join(base, ...(fixed === -1 ? segments : segments.slice(0, fixed))));
}

const IDENTIFIER = /^#?[A-Za-z_$][\w$]*(?:\.#?[A-Za-z_$][\w$]*)?$/;
const isName = (text: string) => IDENTIFIER.test(text) && !FILE_LIKE.test(text);

/** The paths a page names, and the names it pins to them: `path` `a`, `b` (whitespace, then ", " between names). */
function readPage(markdown: string, base: string): { paths: string[]; pinned: Pinned[] } {
  const spans = codeSpans(markdown);
  const paths: string[] = [];
  const pinned: Pinned[] = [];
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!;
    if (!isPath(span.text, base)) continue;
    paths.push(span.text);
    for (let j = i + 1, first = true; j < spans.length; j++, first = false) {
      const between = markdown.slice(spans[j - 1]!.end, spans[j]!.start);
      if (!(first ? /^\s+$/ : /^,\s+$/).test(between) || !isName(spans[j]!.text)) break;
      pinned.push({ path: span.text, name: spans[j]!.text });
    }
  }
  return { paths, pinned };
}

const escape = (s: string) => s.replace(/[$.#]/g, '\\$&');

/** Whether `name` is declared in `source`: a function, class, type, variable, re-export, method or field. */
function declares(source: string, name: string): boolean {
  const n = escape(name);
  const modifiers = '(?:(?:export|default|public|private|protected|static|async|get|set|readonly|override|abstract|declare)\\s+)*';
  const patterns = [
    new RegExp(`\\b(?:function\\*?|class|interface|type|enum|namespace)\\s+${n}\\b`),
    new RegExp(`\\b(?:const|let|var)\\s+${n}\\b`),
    new RegExp(`\\bexport\\s+(?:type\\s+)?\\{[^}]*\\b${n}\\b[^}]*\\}`),
    // A method (not a call: a call statement ends its line with `;`), or a field or arrow property.
    new RegExp(`^[ \\t]*${modifiers}${n}\\s*(?:<[^>\\n]*>)?\\s*\\((?:[^\\n]*[^;\\s])?[ \\t]*$`, 'm'),
    new RegExp(`^[ \\t]*${modifiers}${n}\\s*[?!]?\\s*[:=]`, 'm'),
  ];
  return patterns.some((p) => p.test(source));
}

/** What is wrong with a page: paths that do not exist, names their file does not declare, links that lead nowhere. */
function problemsOf(markdown: string, base: string, pageDir: string): string[] {
  const { paths, pinned } = readPage(markdown, base);
  const problems: string[] = [];
  for (const path of new Set(paths)) {
    if (!pathExists(path, base)) problems.push(`\`${path}\` does not exist (a bare file name must be at the root: write the full path)`);
  }
  for (const { path, name } of pinned) {
    const file = join(base, path);
    if (!existsSync(file) || path.endsWith('/')) continue; // reported above, or a folder
    const source = readFileSync(file, 'utf8');
    const [owner, member] = name.split('.') as [string, string?];
    if (!declares(source, owner)) problems.push(`\`${path}\` does not declare \`${owner}\``);
    else if (member !== undefined && !declares(source, member)) problems.push(`\`${path}\` does not declare \`${name}\``);
  }
  for (const [, target] of markdown.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue;
    if (!existsSync(join(base, pageDir, target!))) problems.push(`link (${target}) leads nowhere`);
  }
  return problems;
}

describe(PAGE, () => {
  const page = readFileSync(join(root, PAGE), 'utf8');
  const { paths, pinned } = readPage(page, root);

  it('names only paths that exist and functions their files define', () => {
    expect(problemsOf(page, root, 'docs')).toEqual([]);
  });

  it('is read as the notation says (a check that found nothing would prove nothing)', () => {
    expect(new Set(paths).size).toBeGreaterThan(80);
    expect(pinned.length).toBeGreaterThan(80);
    expect(pinned).toContainEqual({ path: 'src/bridge/deliver.ts', name: 'deliverNotification' });
    expect(pinned).toContainEqual({ path: 'workflows/transaction/endings.ts', name: 'Endings.finish' });
  });

  it('fails when a file it names is renamed or a function it names is removed', () => {
    const sample = [
      'The bridge: `src/bridge/deliver.ts` `deliverNotification`, `noSuchFunction`; the worker: `src/worker/start.ts`',
      '`startWorker`; the machine: `workflows/transaction/machine.ts` `SigningTransaction.receive`, `SigningTransaction.gone`;',
      'a moved file `src/bridge/renamed.ts` `deliverNotification`; a bare `machine.ts`; [a link](nowhere.md).',
    ].join('\n');
    expect(problemsOf(sample, root, 'docs')).toEqual([
      '`src/bridge/renamed.ts` does not exist (a bare file name must be at the root: write the full path)',
      '`machine.ts` does not exist (a bare file name must be at the root: write the full path)',
      '`src/bridge/deliver.ts` does not declare `noSuchFunction`',
      '`workflows/transaction/machine.ts` does not declare `SigningTransaction.gone`',
      'link (nowhere.md) leads nowhere',
    ]);
  });

  it('is linked from the top of the README, before its first section', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.slice(0, readme.indexOf('\n## '))).toContain('](docs/architecture.md)');
  });

  it('holds no history: no dates, issue numbers or commit hashes (CHANGELOG.md has them)', () => {
    expect(page).not.toMatch(/\b20\d\d-\d\d-\d\d\b/);
    expect(page).not.toMatch(/\bissues? #?\d+|(^|\s)#\d+\b/im);
    expect(page).not.toMatch(/\b(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/);
  });
});
