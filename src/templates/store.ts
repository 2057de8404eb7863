/**
 * Templates kept as immutable, numbered versions (`NDA@1`, `NDA@2`, …) and content-addressed: creating what the
 * latest version already is returns that version. The logic lives here once, over three primitives a directory
 * and an S3 bucket each provide (read a key, write a key only if absent, list keys); reading is ./reader.ts's,
 * which the client package carries without this module's PDF inspection.
 *
 * A version is claimed by writing its key only if absent, so two creates racing for one name cannot both
 * become version N: the loser reads the winner and either returns it (same content) or tries N + 1.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { formatPath } from '../util/zod-issues.js';
import { StoredDefinition, TemplateDefinition } from './definition.js';
import { TemplateDefinitionError } from './errors.js';
import { loadDocuments } from './load-documents.js';
import { documentKey, KeyedTemplateReader, versionKey, type StoredTemplate, type TemplateReader } from './reader.js';

const canonicalize = createRequire(import.meta.url)('canonicalize') as (input: unknown) => string | undefined;

export interface TemplateStore extends TemplateReader {
  create(definition: TemplateDefinition, baseDir: string): Promise<StoredTemplate>;
}

export function templateDigest(definition: StoredDefinition): string {
  const text = canonicalize(definition);
  if (text === undefined) throw new Error('a template definition cannot be canonicalized');
  return createHash('sha256').update(text).digest('hex');
}

/** More creates than this racing for one name is not a race but a fault. */
const MAX_CLAIMS = 20;

export abstract class KeyedTemplateStore extends KeyedTemplateReader implements TemplateStore {
  /** Writes the object unless the key exists (atomically: a reader sees all of it or nothing); false when it existed. */
  protected abstract writeIfAbsent(key: string, body: Buffer, contentType: string): Promise<boolean>;

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
      const latest = await this.latest(name);
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
}
