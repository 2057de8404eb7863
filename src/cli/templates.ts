/**
 * `esign template create|list|show` and `esign start --template`: templates from the command line
 * (docs/templates.md). Registered by main.ts; the work is the template store's and startFromTemplate's, the same
 * a backend calls. Creating, listing and showing need no Temporal, only the store.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { startFromTemplate } from '../client/templates.js';
import {
  instantiate,
  LocalTemplateStore,
  parseRoleValue,
  participantIdFor,
  TemplateDefinitionError,
  TemplateInputError,
  TemplateNotFound,
  templateStoreFromEnv,
  type RoleValue,
  type StoredTemplate,
  type TemplateProblem,
  type TemplateStore,
} from '../templates/index.js';
import type { StartOptions } from './commands.js';
import { CliError, Exit, type CliContext, type CliKit } from './context.js';
import { fields, table } from './output.js';

/** ESIGN_TEMPLATE_STORE, else the dev stack's store in its data folder (where `npm run dev` points the worker). */
export function cliTemplateStore(env: NodeJS.ProcessEnv = process.env): TemplateStore {
  try {
    return templateStoreFromEnv(env) ?? new LocalTemplateStore(join(env.ESIGN_DATA_DIR ?? '.data', 'templates'));
  } catch (err) {
    throw new CliError((err as Error).message, Exit.usage);
  }
}

/** The library's errors, said with what to type next. */
async function explained<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof TemplateNotFound) throw new CliError(`${err.message} (list them with: npx esign template list)`, Exit.notFound);
    if (err instanceof TemplateDefinitionError) {
      throw new CliError(
        `invalid template definition:\n${err.problems.map((p) => `  ${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n')}`,
        Exit.usage,
      );
    }
    if (err instanceof TemplateInputError) throw inputError(err.template, err.problems);
    throw err;
  }
}

const HINTS: Partial<Record<TemplateProblem['kind'], (name: string) => string>> = {
  'missing-role': (name) => ` (--role ${name}="First Last <email>")`,
  'missing-value': (name) => ` (--value ${name}=…)`,
};

function inputError(template: string, problems: readonly TemplateProblem[]): CliError {
  const lines = problems.map((p) => `  ${p.message}${HINTS[p.kind]?.(p.name) ?? ''}`);
  return new CliError(
    `cannot start from template ${template}:\n${lines.join('\n')}\n(see it with: npx esign template show ${template})`,
    Exit.usage,
  );
}

/** `Name=text` pairs of a repeatable flag, by name. */
function pairs(flag: string, items: readonly string[], problems: TemplateProblem[], kind: TemplateProblem['kind']): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0)
      problems.push({
        kind,
        name: item,
        message: `${flag} must look like ${flag === '--role' ? 'Role="First Last <email>"' : 'field=text'}, got "${item}"`,
      });
    else out.set(item.slice(0, eq), item.slice(eq + 1));
  }
  return out;
}

export interface TemplateStartOptions extends StartOptions {
  template?: string;
  role?: string[];
  value?: string[];
}

/** `esign start --template NDA@3 --role Employee="Ada Lovelace <ada@example.com>" --value company=Acme`. */
export async function startWithTemplate(ctx: CliContext, options: TemplateStartOptions) {
  if (!options.template) throw new CliError('--role and --value fill a template: give --template NAME[@VERSION] too', Exit.usage);
  const others = (['file', 'storagePath', 'signer', 'input'] as const).filter((o) => options[o] !== undefined);
  if (others.length > 0) {
    throw new CliError(
      `--template brings its own documents and roles: leave out ${others.map((o) => `--${o.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
      Exit.usage,
    );
  }
  const template = await explained(() => cliTemplateStore().get(options.template!));
  const problems: TemplateProblem[] = [];
  const roles: Record<string, RoleValue> = {};
  const unreadable = new Set<string>();
  for (const [role, text] of pairs('--role', options.role ?? [], problems, 'invalid-value')) {
    try {
      roles[role] = parseRoleValue(text);
    } catch (err) {
      unreadable.add(role);
      problems.push({ kind: 'invalid-value', name: role, message: `role "${role}": ${(err as Error).message}` });
    }
  }
  const values = Object.fromEntries(pairs('--value', options.value ?? [], problems, 'invalid-value'));
  const referenceId = options.referenceId ?? `cli-${Date.now().toString(36)}`;
  const request = {
    referenceId,
    roles,
    values,
    overrides: {
      ...(options.title ? { title: options.title } : {}),
      ...(options.draft ? { status: 'draft' as const } : {}),
      ...(options.deadline ? { signingDeadline: options.deadline } : {}),
      ...(options.reconcile ? { reconcileInterval: options.reconcile } : {}),
    },
  };
  // Every problem at once: the flags' own, and the template's (less "missing" for a role whose flag was unreadable).
  try {
    instantiate(template, request);
  } catch (err) {
    if (!(err instanceof TemplateInputError)) throw err;
    problems.push(...err.problems.filter((p) => !(p.kind === 'missing-role' && unreadable.has(p.name))));
  }
  if (problems.length > 0) throw inputError(template.ref, problems);
  const first = participantIdFor(referenceId, template.definition.roles[0]!.name);
  const started = await explained(() =>
    startFromTemplate(ctx.client, { get: async () => template }, template.ref, request, {
      taskQueue: ctx.taskQueue,
      ...(options.signingUrl ? { signingUrlFor: { participantIds: [first] } } : {}),
    }),
  );
  return {
    referenceId,
    workflowId: started.workflowId,
    template: started.template,
    participants: started.input.participants.map((p, i) => ({
      id: p.id,
      role: template.definition.roles[i]!.name,
      name: `${p.firstName} ${p.lastName}`,
    })),
    ...(started.signingUrl ? { signingUrl: started.signingUrl } : {}),
  };
}

function showTemplate(t: StoredTemplate): string {
  const d = t.definition;
  return [
    fields({ ref: t.ref, digest: t.digest, createdAt: t.createdAt, ...(d.description ? { description: d.description } : {}) }),
    '',
    'Roles (in signing order):',
    table(
      d.roles.map((r) => ({
        role: r.name,
        authentication: r.authenticationType ?? 'none',
        twoFactor: r.twoFactorContact ?? '-',
        description: r.description,
      })),
    ),
    '',
    'Merge fields:',
    table(d.fields.map((f) => ({ field: f.name, required: f.required, default: f.default, label: f.label }))),
    '',
    'Documents:',
    table(d.documents.map((doc) => ({ title: doc.title, sha256: doc.sha256, tags: doc.tags.length }))),
    ...(Object.keys(d.defaults).length > 0 ? ['', 'Defaults:', fields(d.defaults)] : []),
  ].join('\n');
}

export function registerTemplateCommands(program: Command, kit: CliKit): void {
  const template = program.command('template').description('reusable documents, roles and merge fields (docs/templates.md)');

  template
    .command('create <definition.json>')
    .description(
      "store a template's next version (documents' paths are relative to the file); unchanged content returns the latest version",
    )
    .action(async (file: string) => {
      const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new CliError(`cannot read ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, Exit.usage);
      });
      let definition: unknown;
      try {
        definition = JSON.parse(text);
      } catch (err) {
        throw new CliError(`${file} is not JSON: ${(err as Error).message}`, Exit.usage);
      }
      const store = cliTemplateStore();
      const name = (definition as { name?: unknown } | null)?.name;
      const before = typeof name === 'string' ? await store.get(name).catch(() => undefined) : undefined;
      const stored = await explained(() => store.create(definition as never, dirname(resolve(file))));
      const created = stored.version !== before?.version;
      const example = [
        ...stored.definition.roles.map((r) => `--role ${r.name}="First Last <email>"`),
        ...stored.definition.fields.filter((f) => f.required && f.default === undefined).map((f) => `--value ${f.name}=…`),
      ];
      kit.print({ ref: stored.ref, digest: stored.digest, createdAt: stored.createdAt, created, store: store.location }, () =>
        fields({
          ref: stored.ref,
          digest: stored.digest,
          ...(created ? {} : { note: `unchanged: ${stored.ref} already has this content` }),
          next: `npx esign start --template ${stored.ref} ${example.join(' ')}`,
        }),
      );
    });

  template
    .command('list')
    .description('every template with its latest version')
    .action(async () => {
      const store = cliTemplateStore();
      const summaries = await store.list();
      kit.print({ store: store.location, templates: summaries }, () =>
        summaries.length === 0
          ? `no templates in ${store.location} (create one: npx esign template create <definition.json>)`
          : `${table(summaries.map((s) => ({ name: s.name, latest: `${s.name}@${s.latest}`, versions: s.versions, updatedAt: s.updatedAt, roles: s.roles.join(', '), fields: s.fields.join(', ') })))}\n${summaries.length} template(s)`,
      );
    });

  template
    .command('show <ref>')
    .description('a template version (NAME@VERSION, or NAME for the latest): roles, merge fields, documents, defaults')
    .action(async (ref: string) => {
      const stored = await explained(() => cliTemplateStore().get(ref));
      kit.print(stored, () => showTemplate(stored));
    });
}
