/**
 * A template directory read as the client package reads it (`LocalTemplateReader`), and the file access it shares
 * with the store that also creates templates (./local.ts): one file per key under the directory.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { KeyedTemplateReader } from './reader.js';

/** The files of a template directory, by key. */
export class TemplateFiles {
  readonly root: string;

  constructor(dir: string) {
    this.root = resolve(dir);
  }

  get location(): string {
    return `file://${this.root}/`;
  }

  async read(key: string): Promise<Buffer | undefined> {
    return readFile(this.path(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  async keysUnder(prefix: string): Promise<string[]> {
    const start = this.path(prefix.replace(/\/$/, ''));
    const files = await readdir(start, { recursive: true, withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    return files
      .filter((f) => f.isFile() && !f.name.endsWith('.partial'))
      .map((f) => relative(this.root, join(f.parentPath, f.name)).split(sep).join('/'));
  }

  path(key: string): string {
    const path = resolve(this.root, ...key.split('/'));
    if (!path.startsWith(this.root + sep)) throw new Error(`invalid template store key ${JSON.stringify(key)}`);
    return path;
  }
}

/** Templates in a local directory (the dev stack's `.data/templates`, the CLI's), read only: create them with `esign template create`. */
export class LocalTemplateReader extends KeyedTemplateReader {
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

  protected keysUnder(prefix: string): Promise<string[]> {
    return this.#files.keysUnder(prefix);
  }
}
