/** Templates (docs/templates.md): definitions, their versioned stores, and how a request fills one. */
export { TemplateDefinition, StoredDefinition, TemplateField, TemplateRole, TemplateTag, TEXT_TAG_TYPES } from './definition.js';
export { TemplateDefinitionError, TemplateDocumentNotFound, TemplateInputError, TemplateNotFound } from './errors.js';
export type { TemplateProblem, TemplateProblemKind } from './errors.js';
export { KeyedTemplateReader, parseTemplateRef } from './reader.js';
export type { StoredTemplate, TemplateReader, TemplateSummary } from './reader.js';
export { KeyedTemplateStore, templateDigest } from './store.js';
export type { TemplateStore } from './store.js';
export { LocalTemplateReader } from './local-reader.js';
export { LocalTemplateStore } from './local.js';
export { S3TemplateStore } from './s3.js';
export { templateStoreAt, templateStoreFromEnv, templateStoreSetting } from './env.js';
export type { TemplateStoreSetting } from './env.js';
export { parseRoleValue, TemplateOverrides } from './request.js';
export type { RoleValue, TemplateRequest } from './request.js';
export { instantiate, participantIdFor } from './instantiate.js';
