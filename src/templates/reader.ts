/**
 * Reading templates (docs/templates.md): what a backend needs to start from one, free of what creating one needs
 * (PDF inspection), so the client package (packages/client) carries no PDF library. Creating is in ./store.ts,
 * over the same keys:
 *
 *   templates/<name>/<version>.json   a StoredTemplate, written once, never changed
 *   documents/<sha256>.pdf            a document, stored once whatever uses it
 */
import { createHash } from 'node:crypto';
import { describeIssues } from '../util/zod-issues.js';
import { SHA256_HEX, StoredTemplateSchema, TEMPLATE_NAME, type StoredDefinition } from './definition.js';
import { TemplateDocumentNotFound, TemplateNotFound } from './errors.js';

export interface StoredTemplate {
  /** `name@version`, e.g. `NDA@3`. */
  ref: string;
  name: string;
  version: number;
  /** SHA-256 (hex) of the RFC 8785 canonical JSON of `definition`, whose documents are their SHA-256s. */
  digest: string;
  createdAt: string;
  definition: StoredDefinition;
}

export interface TemplateSummary {
  name: string;
  /** The latest version's number, and how many versions there are (1 … latest). */
  latest: number;
  versions: number;
  digest: string;
  updatedAt: string;
  description?: string;
  roles: string[];
  fields: string[];
}

/** A template store as a backend or a worker reads it: a directory, a bucket, or a store of your own. */
export interface TemplateReader {
  /** Where it is, for messages: `file:///…/` or `s3://bucket/prefix/`. */
  readonly location: string;
  /** `NDA@3`, or `NDA` for its latest version; throws TemplateNotFound naming the ref. */
  get(ref: string): Promise<StoredTemplate>;
  list(): Promise<TemplateSummary[]>;
  /** A document's bytes, checked against its SHA-256; throws TemplateDocumentNotFound when the store lacks it or it was altered. */
  readDocument(sha256: string): Promise<Buffer>;
}

/** `NDA@3` → name and version; `NDA` → name only. */
export function parseTemplateRef(ref: string): { name: string; version?: number } {
  const at = ref.lastIndexOf('@');
  const name = at === -1 ? ref : ref.slice(0, at);
  const version = at === -1 ? undefined : ref.slice(at + 1);
  if (!TEMPLATE_NAME.test(name) || (version !== undefined && !/^[1-9][0-9]{0,8}$/.test(version))) {
    throw new TemplateNotFound(ref, 'a template is named "name" (its latest version) or "name@version", e.g. NDA@3');
  }
  return version === undefined ? { name } : { name, version: Number(version) };
}

const VERSION_FILE = /^([1-9][0-9]*)\.json$/;

export const versionKey = (name: string, version: number) => `templates/${name}/${version}.json`;
export const documentKey = (sha256: string) => `documents/${sha256}.pdf`;

/** Templates read over two primitives a directory and an S3 bucket each provide: read a key, list keys. */
export abstract class KeyedTemplateReader implements TemplateReader {
  abstract readonly location: string;
  /** The object's bytes, or undefined when there is none. */
  protected abstract read(key: string): Promise<Buffer | undefined>;
  /** Every key that starts with `prefix`. */
  protected abstract keysUnder(prefix: string): Promise<string[]>;

  async get(ref: string): Promise<StoredTemplate> {
    const { name, version } = parseTemplateRef(ref);
    if (version === undefined) {
      const latest = await this.latest(name);
      if (!latest) throw new TemplateNotFound(ref, `no template named ${name} in ${this.location}`);
      return latest;
    }
    const found = await this.#version(name, version);
    if (found) return found;
    const versions = await this.#versions(name);
    throw new TemplateNotFound(
      ref,
      versions.length === 0 ? `no template named ${name} in ${this.location}` : `${name} has versions 1 to ${Math.max(...versions)}`,
    );
  }

  async list(): Promise<TemplateSummary[]> {
    const byName = new Map<string, number[]>();
    for (const key of await this.keysUnder('templates/')) {
      const [, name, file] = key.split('/');
      const version = VERSION_FILE.exec(file ?? '')?.[1];
      if (!name || !version || !TEMPLATE_NAME.test(name)) continue;
      byName.set(name, [...(byName.get(name) ?? []), Number(version)]);
    }
    const summaries: TemplateSummary[] = [];
    for (const [name, versions] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
      const latest = await this.#version(name, Math.max(...versions));
      if (!latest) continue;
      summaries.push({
        name,
        latest: latest.version,
        versions: versions.length,
        digest: latest.digest,
        updatedAt: latest.createdAt,
        ...(latest.definition.description ? { description: latest.definition.description } : {}),
        roles: latest.definition.roles.map((r) => r.name),
        fields: latest.definition.fields.map((f) => f.name),
      });
    }
    return summaries;
  }

  async readDocument(sha256: string): Promise<Buffer> {
    if (!SHA256_HEX.test(sha256)) throw new Error(`"${sha256}" is not a document's SHA-256 (64 lowercase hex digits)`);
    const bytes = await this.read(documentKey(sha256));
    if (!bytes) throw new TemplateDocumentNotFound(sha256, this.location);
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (actual !== sha256) throw new TemplateDocumentNotFound(sha256, this.location, actual);
    return bytes;
  }

  /** The latest version of `name`, or undefined when there is none. */
  protected async latest(name: string): Promise<StoredTemplate | undefined> {
    const versions = await this.#versions(name);
    return versions.length === 0 ? undefined : this.#version(name, Math.max(...versions));
  }

  async #versions(name: string): Promise<number[]> {
    const prefix = `templates/${name}/`;
    return (await this.keysUnder(prefix))
      .map((key) => VERSION_FILE.exec(key.slice(prefix.length))?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number);
  }

  async #version(name: string, version: number): Promise<StoredTemplate | undefined> {
    const key = versionKey(name, version);
    const body = await this.read(key);
    if (!body) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new Error(`${this.location}${key} is not JSON: ${(err as Error).message}`, { cause: err });
    }
    const parsed = StoredTemplateSchema.safeParse(json);
    if (!parsed.success || parsed.data.ref !== `${name}@${version}`) {
      throw new Error(
        `${this.location}${key} is not a stored template: ${parsed.success ? 'its ref differs from its key' : describeIssues(parsed.error)}`,
      );
    }
    return parsed.data;
  }
}
