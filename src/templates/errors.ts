/**
 * What can go wrong with templates, as errors a caller can tell apart and a person can act on: each names the
 * template, role, field or file at fault, and those that collect problems report all of them at once.
 */

/** No template (or no such version) under this ref, or a ref that is not `name` or `name@version`. */
export class TemplateNotFound extends Error {
  override readonly name = 'TemplateNotFound';
  constructor(
    readonly ref: string,
    detail?: string,
  ) {
    super(`template "${ref}" not found${detail ? `: ${detail}` : ''}`);
  }
}

/** A definition that cannot become a template: every problem, each naming where it is (`documents[0].tags[2].role`). */
export class TemplateDefinitionError extends Error {
  override readonly name = 'TemplateDefinitionError';
  constructor(
    readonly problems: readonly { path: string; message: string }[],
    what = 'invalid template definition',
  ) {
    super(`${what}: ${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ')}`);
  }
}

export type TemplateProblemKind = 'missing-role' | 'unknown-role' | 'missing-value' | 'unknown-value' | 'invalid-value';

export interface TemplateProblem {
  kind: TemplateProblemKind;
  /** The role, field or request property at fault (`Employee`, `company`, `overrides.callbackUrl`). */
  name: string;
  /** A sentence that names it and says what to do. */
  message: string;
}

/** A request a template cannot be filled with: every problem at once, before anything reaches Temporal or the provider. */
export class TemplateInputError extends Error {
  override readonly name = 'TemplateInputError';
  constructor(
    readonly template: string,
    readonly problems: readonly TemplateProblem[],
  ) {
    super(`cannot start from template ${template}: ${problems.map((p) => p.message).join('; ')}`);
  }
}

/**
 * A document a template names that its store does not hold (a store other than the one it was created in?), or
 * holds altered: bytes whose SHA-256 is not the one they are stored under are not that document.
 */
export class TemplateDocumentNotFound extends Error {
  override readonly name = 'TemplateDocumentNotFound';
  constructor(
    readonly sha256: string,
    location: string,
    altered?: string,
  ) {
    super(
      altered
        ? `template document ${sha256} in the template store at ${location} has been altered (its SHA-256 is now ${altered})`
        : `template document ${sha256} is not in the template store at ${location}`,
    );
  }
}
