import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failures with their message and stack trace moved into a payload, so the
 * payload codec encrypts them like any input: a failure's message may quote
 * what a caller sent (a document's title holding a signer's name), and the
 * server stores failures in every ActivityTaskFailed and WorkflowExecutionFailed
 * event. Readers with the codec (clients, the Web UI through the codec
 * endpoint, other SDKs) decode them; without it they read "Encoded failure".
 *
 * Loaded by path (`failureConverterPath`) into the workflow bundle and by the
 * worker and clients, so it imports only what workflow code may.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
