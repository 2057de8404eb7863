// A newcomer finds every folder and document from the README: its map names each top-level folder and its reference
// table each document in docs/; docs/architecture.md's layout names each folder of the tree down to src/'s. Text only.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

async function folders(dir: string): Promise<string[]> {
  return (await readdir(join(root, dir), { withFileTypes: true }))
    .filter((e) => e.isDirectory() && !/^(\.|node_modules$|test-artifacts$|dist$|reports$)/.test(e.name))
    .map((e) => `${dir ? `${dir}/` : ''}${e.name}/`);
}

const named = (text: string, name: string) => text.includes(`\`${name}`) || text.includes(`(${name})`);

it("the README's map names every top-level folder, and its reference every document in docs/", async () => {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const map = readme.slice(readme.indexOf('## Map'));
  const docs = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  expect((await folders('')).filter((f) => !named(map, f))).toEqual([]);
  expect(docs.filter((d) => !named(map, d))).toEqual([]);
});

it("docs/architecture.md's layout names every folder of the tree and of src/", async () => {
  const page = await readFile(join(root, 'docs/architecture.md'), 'utf8');
  const layout = page.slice(page.indexOf('## 5. Layout'));
  const expected = [...(await folders('')), ...(await folders('src'))];
  expect(expected.filter((f) => !named(layout, f))).toEqual([]);
});

it('the README stays a front page: about 12 KB at most', async () => {
  expect((await readFile(join(root, 'README.md'))).length).toBeLessThanOrEqual(12 * 1024);
});
