/**
 * The provider API (../shared/spec/esign-api.md) as an OpenAPI 3.1 document,
 * generated from the zod contract in ./schemas.ts: a field changes in one
 * place. The provider sandbox serves it at /openapi.json; integrators generate
 * clients from it, and CI fuzzes the sandbox against it (Schemathesis).
 */
import { z } from 'zod';
import {
  CreateTransactionRequest,
  IframeRequest,
  IframeResponse,
  ListTransactionsResponse,
  ProblemDetails,
  TRANSACTION_STATUSES,
  TransactionRecord,
  UpdateTransactionRequest,
  UploadResponse,
} from './schemas.js';

type JsonSchema = Record<string, unknown>;

/** A zod schema as JSON Schema 2020-12 (the dialect of OpenAPI 3.1), as a request accepts it or a response carries it. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('Problem') } } });

/** The failures every authenticated operation may answer (docs/spec-gaps.md, row 9). */
const COMMON_FAILURES = {
  '401': problem('Missing, invalid or expired bearer token'),
  '429': problem('Rate limited; retry after the Retry-After header'),
};
const BODY_FAILURES = {
  '400': problem('Malformed body (not JSON, or a refused key)'),
  '413': problem('Body too large'),
  '415': problem('Wrong Content-Type'),
  '422': problem('The body breaks the contract; `errors` names each field with a JSON pointer'),
};
const transactionId = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The transaction id',
  schema: { type: 'string', minLength: 1 },
};

export function openApiDocument(serverUrl?: string): JsonSchema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Electronic Signature Transaction Service',
      version: '1.0.0',
      description:
        'The provider API of ../shared/spec/esign-api.md, with the choices docs/spec-gaps.md records where the spec is silent. Generated from the zod contract (src/esign/schemas.ts).',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ bearerAuth: [] }],
    paths: {
      '/documents/upload': {
        post: {
          operationId: 'uploadDocuments',
          summary: 'Upload PDF files (4.1)',
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['files'],
                  properties: { files: { type: 'array', minItems: 1, items: { type: 'string', contentMediaType: 'application/pdf' } } },
                },
              },
            },
          },
          responses: {
            '200': { description: 'One StoragePath per file (either shape of 2.1)', content: json(ref('UploadResponse')) },
            ...BODY_FAILURES,
            ...COMMON_FAILURES,
          },
        },
      },
      '/transactions': {
        post: {
          operationId: 'createTransaction',
          summary: 'Create a transaction (4.2)',
          requestBody: { required: true, content: json(ref('CreateTransactionRequest')) },
          responses: {
            '201': { description: 'The created record', content: json(ref('TransactionRecord')) },
            ...BODY_FAILURES,
            ...COMMON_FAILURES,
          },
        },
        get: {
          operationId: 'listTransactions',
          summary: 'List transactions, optionally by status (4.5)',
          parameters: [
            { name: 'status', in: 'query', required: false, schema: { type: 'string', minLength: 1, examples: [...TRANSACTION_STATUSES] } },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } },
            { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
          ],
          responses: {
            '200': { description: 'A page of transactions, newest first, and the total', content: json(ref('ListTransactionsResponse')) },
            '400': problem('A malformed query parameter'),
            ...COMMON_FAILURES,
          },
        },
      },
      '/transactions/{id}': {
        parameters: [transactionId],
        get: {
          operationId: 'getTransaction',
          summary: 'Get a transaction (4.3)',
          responses: {
            '200': { description: 'The record', content: json(ref('TransactionRecord')) },
            '404': problem('No such transaction'),
            ...COMMON_FAILURES,
          },
        },
        put: {
          operationId: 'updateTransaction',
          summary: 'Replace a transaction (4.4)',
          requestBody: { required: true, content: json(ref('UpdateTransactionRequest')) },
          responses: {
            '201': { description: 'The replaced record', content: json(ref('TransactionRecord')) },
            '404': problem('No such transaction'),
            '409': problem('The transaction can no longer be replaced'),
            ...BODY_FAILURES,
            ...COMMON_FAILURES,
          },
        },
      },
      '/transactions/{id}/documents': {
        parameters: [transactionId],
        get: {
          operationId: 'downloadCompletedDocuments',
          summary: 'Download the completed documents as one ZIP (4.6)',
          parameters: [{ name: 'type', in: 'query', required: true, schema: { type: 'string', enum: ['completed'] } }],
          responses: {
            '200': {
              description: 'The ZIP',
              content: { 'application/zip': { schema: { type: 'string', contentMediaType: 'application/zip' } } },
            },
            '400': problem('`type` is not `completed`'),
            '404': problem('No such transaction'),
            '409': problem('Not completed yet'),
            ...COMMON_FAILURES,
          },
        },
      },
      '/iframe-request': {
        post: {
          operationId: 'createIframeUrl',
          summary: 'Generate a signing-page address (4.7)',
          requestBody: { required: true, content: json(ref('IframeRequest')) },
          responses: {
            '200': {
              description: 'The address, single-use and short-lived (docs/spec-gaps.md, row 38)',
              content: json(ref('IframeResponse')),
            },
            '404': problem('No transaction with that esignId'),
            ...BODY_FAILURES,
            ...COMMON_FAILURES,
          },
        },
      },
    },
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        CreateTransactionRequest: schemaOf(CreateTransactionRequest, 'input'),
        UpdateTransactionRequest: schemaOf(UpdateTransactionRequest, 'input'),
        IframeRequest: schemaOf(IframeRequest, 'input'),
        TransactionRecord: schemaOf(TransactionRecord, 'output'),
        ListTransactionsResponse: schemaOf(ListTransactionsResponse, 'output'),
        UploadResponse: schemaOf(UploadResponse, 'output'),
        IframeResponse: schemaOf(IframeResponse, 'output'),
        Problem: schemaOf(ProblemDetails, 'output'),
      },
    },
  };
}
