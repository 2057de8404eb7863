/** Templates in a local directory (the dev stack's `.data/templates`): one file per key. */
import { randomUUID } from 'node:crypto';
import { link, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TemplateFiles } from './local-reader.js';
import { KeyedTemplateStore } from './store.js';

export class LocalTemplateStore extends KeyedTemplateStore {
  readonly #files: TemplateFiles;

  constructor(dir: string) {
    super();
    this.#files = new TemplateFiles(dir);
  }

  get location(): string {
    return this.#files.location;
  }

  protected read(key: string): Promise<Buffer | undefined> {
    return this.#files.read(key);
  }

  protected async writeIfAbsent(key: string, body: Buffer): Promise<boolean> {
    const path = this.#files.path(key);
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

  protected keysUnder(prefix: string): Promise<string[]> {
    return this.#files.keysUnder(prefix);
  }
}
