/**
 * Starting a transaction from a template, for backends and the CLI: the template is read and filled before
 * anything is sent, so a missing template or a bad request (TemplateNotFound, TemplateInputError) never reaches
 * Temporal or the provider. The start itself is startEsignTransaction's, with its guarantees.
 */
import type { Client } from '@temporalio/client';
import { instantiate } from '../templates/instantiate.js';
import type { StoredTemplate, TemplateReader } from '../templates/reader.js';
import type { TemplateRequest } from '../templates/request.js';
import type { EsignTransactionInput } from '../transaction/input.js';
import { startEsignTransaction, type StartedTransaction, type StartOptions } from './transactions.js';

export interface StartedFromTemplate extends StartedTransaction {
  /** The exact version used (`NDA@3`, also when `NDA` was asked for). */
  template: StoredTemplate['ref'];
  /** The input the workflow was started with (participant ids included, for signing URLs). */
  input: EsignTransactionInput;
}

export async function startFromTemplate(
  client: Client,
  store: Pick<TemplateReader, 'get'>,
  ref: string,
  request: TemplateRequest,
  options: StartOptions = {},
): Promise<StartedFromTemplate> {
  const template = await store.get(ref);
  const input = instantiate(template, request);
  const started = await startEsignTransaction(client, input, options);
  return { ...started, template: template.ref, input };
}
