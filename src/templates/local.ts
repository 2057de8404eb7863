/** Templates in a local directory (the dev stack's `.data/templates`): one file per key. */
import { randomUUID } from 'node:crypto';
import { link, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { KeyedTemplateStore } from './store.js';

export class LocalTemplateStore extends KeyedTemplateStore {
  readonly #root: string;

  constructor(dir: string) {
    super();
    this.#root = resolve(dir);
  }

  get location(): string {
    return `file://${this.#root}/`;
  }

  protected async read(key: string): Promise<Buffer | undefined> {
    return readFile(this.#path(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  protected async writeIfAbsent(key: string, body: Buffer): Promise<boolean> {
    const path = this.#path(key);
    await mkdir(dirname(path), { recursive: true });
    // Written beside, then hard-linked into place: link() fails when the name exists, and a reader never sees a
    // half-written file, which a rename (it replaces) or an exclusive open (it is seen empty first) cannot both give.
    const partial = `${path}.${randomUUID()}.partial`;
    await writeFile(partial, body);
    try {
      await link(partial, path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await rm(partial, { force: true });
    }
  }

  protected async keysUnder(prefix: string): Promise<string[]> {
    const start = this.#path(prefix.replace(/\/$/, ''));
    const files = await readdir(start, { recursive: true, withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    return files
      .filter((f) => f.isFile() && !f.name.endsWith('.partial'))
      .map((f) => relative(this.#root, join(f.parentPath, f.name)).split(sep).join('/'));
  }

  #path(key: string): string {
    const path = resolve(this.#root, ...key.split('/'));
    if (!path.startsWith(this.#root + sep)) throw new Error(`invalid template store key ${JSON.stringify(key)}`);
    return path;
  }
}
