/** Templates (docs/templates.md): definitions, their versioned stores, and how a request fills one. */
export { TemplateDefinition, StoredDefinition, TemplateField, TemplateRole, TemplateTag, TEXT_TAG_TYPES } from './definition.js';
export { TemplateDefinitionError, TemplateDocumentNotFound, TemplateInputError, TemplateNotFound } from './errors.js';
export type { TemplateProblem, TemplateProblemKind } from './errors.js';
export { KeyedTemplateStore, parseTemplateRef, templateDigest } from './store.js';
export type { StoredTemplate, TemplateStore, TemplateSummary } from './store.js';
export { LocalTemplateStore } from './local.js';
export { S3TemplateStore } from './s3.js';
export { templateStoreAt, templateStoreFromEnv, templateStoreSetting } from './env.js';
export type { TemplateStoreSetting } from './env.js';
export { parseRoleValue, TemplateOverrides } from './request.js';
export type { RoleValue, TemplateRequest } from './request.js';
export { instantiate, participantIdFor } from './instantiate.js';
