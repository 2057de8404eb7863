/**
 * Templates kept as immutable, numbered versions (`NDA@1`, `NDA@2`, …) and content-addressed: creating what the
 * latest version already is returns that version. The logic lives here once, over three primitives a directory
 * and an S3 bucket each provide (read a key, write a key only if absent, list keys):
 *
 *   templates/<name>/<version>.json   a StoredTemplate, written once, never changed
 *   documents/<sha256>.pdf            a document, stored once whatever uses it
 *
 * A version is claimed by writing its key only if absent, so two creates racing for one name cannot both
 * become version N: the loser reads the winner and either returns it (same content) or tries N + 1.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { describeIssues, formatPath } from '../util/zod-issues.js';
import { SHA256_HEX, StoredDefinition, StoredTemplateSchema, TEMPLATE_NAME, TemplateDefinition } from './definition.js';
import { TemplateDefinitionError, TemplateDocumentNotFound, TemplateNotFound } from './errors.js';
import { loadDocuments } from './load-documents.js';

const canonicalize = createRequire(import.meta.url)('canonicalize') as (input: unknown) => string | undefined;

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

export interface TemplateStore {
  /** Where it is, for messages: `file:///…/` or `s3://bucket/prefix/`. */
  readonly location: string;
  create(definition: TemplateDefinition, baseDir: string): Promise<StoredTemplate>;
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

export function templateDigest(definition: StoredDefinition): string {
  const text = canonicalize(definition);
  if (text === undefined) throw new Error('a template definition cannot be canonicalized');
  return createHash('sha256').update(text).digest('hex');
}

const VERSION_FILE = /^([1-9][0-9]*)\.json$/;
/** More creates than this racing for one name is not a race but a fault. */
const MAX_CLAIMS = 20;

export abstract class KeyedTemplateStore implements TemplateStore {
  abstract readonly location: string;
  /** The object's bytes, or undefined when there is none. */
  protected abstract read(key: string): Promise<Buffer | undefined>;
  /** Writes the object unless the key exists (atomically: a reader sees all of it or nothing); false when it existed. */
  protected abstract writeIfAbsent(key: string, body: Buffer, contentType: string): Promise<boolean>;
  /** Every key that starts with `prefix`. */
  protected abstract keysUnder(prefix: string): Promise<string[]>;

  async create(definition: TemplateDefinition, baseDir: string): Promise<StoredTemplate> {
    const parsed = TemplateDefinition.safeParse(definition);
    if (!parsed.success) {
      throw new TemplateDefinitionError(parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })));
    }
    const problems: { path: string; message: string }[] = [];
    const documents = await loadDocuments(parsed.data.documents, baseDir, problems);
    if (problems.length > 0) throw new TemplateDefinitionError(problems);
    const stored = StoredDefinition.parse({
      ...parsed.data,
      documents: parsed.data.documents.map(({ path: _path, ...d }, i) => ({ ...d, sha256: documents[i]!.sha256 })),
    });
    const digest = templateDigest(stored);
    const { name } = stored;
    for (let claim = 0; claim < MAX_CLAIMS; claim++) {
      const latest = await this.#latest(name);
      if (latest?.digest === digest) return latest;
      // Documents before the version that names them: a version never points at a document not yet stored.
      for (const d of documents) await this.writeIfAbsent(documentKey(d.sha256), d.bytes, 'application/pdf');
      const version = (latest?.version ?? 0) + 1;
      const template: StoredTemplate = {
        ref: `${name}@${version}`,
        name,
        version,
        digest,
        createdAt: new Date().toISOString(),
        definition: stored,
      };
      if (await this.writeIfAbsent(versionKey(name, version), Buffer.from(`${JSON.stringify(template, null, 2)}\n`), 'application/json')) {
        return template;
      }
    }
    throw new Error(`template ${name}: ${MAX_CLAIMS} creates in a row lost the race for the next version`);
  }

  async get(ref: string): Promise<StoredTemplate> {
    const { name, version } = parseTemplateRef(ref);
    if (version === undefined) {
      const latest = await this.#latest(name);
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

  async #versions(name: string): Promise<number[]> {
    const prefix = `templates/${name}/`;
    return (await this.keysUnder(prefix))
      .map((key) => VERSION_FILE.exec(key.slice(prefix.length))?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number);
  }

  async #latest(name: string): Promise<StoredTemplate | undefined> {
    const versions = await this.#versions(name);
    return versions.length === 0 ? undefined : this.#version(name, Math.max(...versions));
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

const versionKey = (name: string, version: number) => `templates/${name}/${version}.json`;
const documentKey = (sha256: string) => `documents/${sha256}.pdf`;
