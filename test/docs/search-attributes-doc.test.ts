// docs/search-attributes.md, the production namespace's setup script and the code's one list of search attributes
// agree: a new attribute documented, registered and created everywhere, or this fails.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { esignSearchAttributes } from '../../src/definitions/search-attributes.js';
import { projectRoot } from '../../tools/support/launch.js';

/** The SDK's type names as the docs and the CLI spell them. */
const TYPE_NAMES: Record<string, string> = {
  KEYWORD: 'Keyword',
  INT: 'Int',
  KEYWORD_LIST: 'KeywordList',
  TEXT: 'Text',
  BOOL: 'Bool',
  DOUBLE: 'Double',
  DATETIME: 'Datetime',
};
const defined = esignSearchAttributes.map((k) => `${k.name}:${TYPE_NAMES[k.type]}`).sort();

it('documents every search attribute with its type, and no other', async () => {
  const doc = await readFile(join(projectRoot, 'docs/search-attributes.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `(Esign\w+)` \| (\w+) \|/gm)].map((m) => `${m[1]}:${m[2]}`).sort();
  expect(rows).toEqual(defined);
});

it('creates the same ones in the production namespace (deploy/temporal/setup-namespace.sh)', async () => {
  const script = await readFile(join(projectRoot, 'deploy/temporal/setup-namespace.sh'), 'utf8');
  const listed = /for sa in ([^;]+);/.exec(script)?.[1]?.trim().split(/\s+/).sort();
  expect(listed).toEqual(defined);
});

it('states no count of them that could go stale', async () => {
  const docs = ['README.md', ...(await readdir(join(projectRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  for (const file of docs) {
    const text = await readFile(join(projectRoot, file), 'utf8');
    expect(text, file).not.toMatch(/\b(two|three|four|five|six|seven|eight|nine|ten|\d+) `?Esign\*?`? (custom )?search attributes\b/i);
    expect(text, file).not.toMatch(/\b(two|three|four|five|six|seven|eight|nine|ten) `Esign\*` attributes\b/i);
  }
});
