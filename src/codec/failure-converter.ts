import { DefaultFailureConverter, type PayloadConverter, type ProtoFailure } from '@temporalio/common';

/**
 * The worker's refusal of a payload that arrived unencrypted (src/codec/plaintext.ts). Defined here: this module is
 * loaded by path, by Node's own loader, which cannot follow an import of our TypeScript sources.
 */
export const PLAINTEXT_REFUSED_MESSAGE =
  'this payload arrived unencrypted, and the worker refuses plaintext: start, signal and update these workflows with the payload codec (docs/codec.md), or set ESIGN_CODEC_PLAINTEXT=allow on the worker during a migration';

/** The names of src/codec/aes-gcm-codec.ts's decode errors (matched by name: this module imports nothing of ours). */
export const CODEC_ERROR_NAMES: readonly string[] = ['PayloadUndecodable', 'CodecKeyUnknown', 'PayloadErased', 'DataKeyMissing'];

/**
 * Failures with their message and stack trace moved into a payload, so the
 * payload codec encrypts them like any input: a failure's message may quote
 * what a caller sent (a document's title holding a signer's name), and the
 * server stores failures in every ActivityTaskFailed and WorkflowExecutionFailed
 * event. Readers with the codec (clients, the Web UI through the codec
 * endpoint, other SDKs) decode them; without it they read "Encoded failure".
 *
 * Two kinds of message stay in clear, both fixed texts with nothing of the
 * caller's in them. The refusal of a payload that arrived unencrypted: its
 * reader is, by definition, a client without the codec, which could not read
 * it encrypted. And the codec's own decode errors (`PayloadUndecodable`,
 * `CodecKeyUnknown`: at most a key id, which is not secret): a worker that
 * cannot decode a run's payloads fails its workflow task with one, and whoever
 * reads that failure (getEsignStatus, `esign status`, the Web UI) may hold
 * none of the worker's keys, or only the one the worker lacks.
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
    // A plain Error's failure has no type: the codec's carries its name as one, what a reader matches on.
    if (err instanceof Error && CODEC_ERROR_NAMES.includes(err.name))
      return {
        ...this.errorToFailureInner(err, payloadConverter, context),
        applicationFailureInfo: { type: err.name, nonRetryable: false },
      };
    return super.errorToFailure(err, payloadConverter, context);
  }
}

export const failureConverter = new EncryptedFailureConverter();
