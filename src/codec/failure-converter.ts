import { DefaultFailureConverter, type PayloadConverter, type ProtoFailure } from '@temporalio/common';

/**
 * The worker's refusal of a payload that arrived unencrypted (src/codec/plaintext.ts). Defined here: this module is
 * loaded by path, by Node's own loader, which cannot follow an import of our TypeScript sources.
 */
export const PLAINTEXT_REFUSED_MESSAGE =
  'this payload arrived unencrypted, and the worker refuses plaintext: start, signal and update these workflows with the payload codec (docs/codec.md), or set ESIGN_CODEC_PLAINTEXT=allow on the worker during a migration';

/**
 * Failures with their message and stack trace moved into a payload, so the
 * payload codec encrypts them like any input: a failure's message may quote
 * what a caller sent (a document's title holding a signer's name), and the
 * server stores failures in every ActivityTaskFailed and WorkflowExecutionFailed
 * event. Readers with the codec (clients, the Web UI through the codec
 * endpoint, other SDKs) decode them; without it they read "Encoded failure".
 *
 * One message stays in clear: the refusal of a payload that arrived
 * unencrypted. Its reader is, by definition, a client without the codec, which
 * could not read it encrypted; and it is a fixed text with nothing of the
 * caller's in it.
 *
 * Loaded by path (`failureConverterPath`) into the workflow bundle and by the
 * worker and clients, so it imports only what workflow code may.
 */
class EncryptedFailureConverter extends DefaultFailureConverter {
  constructor() {
    super({ encodeCommonAttributes: true });
  }

  override errorToFailure(
    err: unknown,
    payloadConverter: PayloadConverter,
    context?: Parameters<DefaultFailureConverter['errorToFailure']>[2],
  ): ProtoFailure {
    if (err instanceof Error && err.message.endsWith(PLAINTEXT_REFUSED_MESSAGE))
      return this.errorToFailureInner(err, payloadConverter, context);
    return super.errorToFailure(err, payloadConverter, context);
  }
}

export const failureConverter = new EncryptedFailureConverter();
