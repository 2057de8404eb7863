/**
 * A run whose payloads this worker cannot decode (a key id it lacks, a corrupt payload) fails its workflow task on
 * every attempt and stays Running: the SDK logs each attempt as one more "Failed to process Workflow Activation",
 * among the ordinary ones. This names it once per workflow, at error level, with what an operator acts on (the
 * workflow id and the key id; no payload, nothing personal), and counts it (`esign_undecodable_workflows`, by
 * reason) on the worker's metrics endpoint, where an alert can watch it. Clients see the same run as
 * `phase: 'stuck'` (src/client/stuck.ts); docs/decisions/stuck-runs.md says why the run is left retrying.
 */
import type { Logger, MetricMeter, Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { CodecKeyUnknown, PayloadUndecodable } from '../codec/aes-gcm-codec.js';
import { DataKeyMissing, PayloadErased } from '../codec/data-keys.js';

export interface UndecodableReporting {
  /** Default: the Temporal runtime's logger (the process's JSON log under `npm run worker`). */
  logger?: Logger;
  /** Default: the Temporal runtime's meter (its Prometheus endpoint, ESIGN_METRICS_ADDRESS). */
  metricMeter?: MetricMeter;
}

/** How many workflow ids are remembered as reported: a bound on memory, not on runs (the oldest is forgotten). */
const REMEMBERED = 10_000;

export class UndecodableRuns {
  readonly #reported = new Set<string>();
  readonly #sinks: () => { logger: Logger; metricMeter: MetricMeter };

  /** `sinks` is asked at the first report: the runtime the worker runs in is installed by then. */
  constructor(sinks: () => { logger: Logger; metricMeter: MetricMeter }) {
    this.#sinks = sinks;
  }

  /**
   * The codec's decode, reporting its failures for the workflow the SDK names in the context (activation payloads
   * are `workflow` context, activity inputs `activity` context with their workflow's id). The error goes on to the
   * SDK unchanged: the task fails and is retried, so a worker given the key later resumes the run.
   */
  wrap(codec: PayloadCodec): PayloadCodec & { inner: PayloadCodec } {
    return {
      // Named, so what looks for the AES-GCM codec finds it inside (aesGcmCodecOf).
      inner: codec,
      encode: (payloads: Payload[], context?: SerializationContext) => codec.encode(payloads, context),
      decode: async (payloads: Payload[], context?: SerializationContext) => {
        try {
          return await codec.decode(payloads, context);
        } catch (err) {
          this.report(err, context);
          throw err;
        }
      },
    };
  }

  report(err: unknown, context: SerializationContext | undefined): void {
    const workflowId = context?.workflowId;
    // Only the codec's own errors: their message is a fixed text and a key id, safe to log.
    if (!workflowId || !(err instanceof PayloadUndecodable)) return;
    const key = `${context.namespace}\n${workflowId}`;
    if (this.#reported.has(key)) return;
    if (this.#reported.size >= REMEMBERED) this.#reported.delete(this.#reported.values().next().value!);
    this.#reported.add(key);
    const reason =
      err instanceof CodecKeyUnknown
        ? 'unknown_key'
        : err instanceof PayloadErased
          ? 'erased'
          : err instanceof DataKeyMissing
            ? 'key_missing'
            : 'corrupt';
    const { logger, metricMeter } = this.#sinks();
    logger.error(
      `workflow ${workflowId} has payloads this worker cannot decode: its workflow task fails on every attempt until a ` +
        'worker holds the key (ESIGN_CODEC_KEYS, docs/codec.md), or it is terminated',
      { workflowId, namespace: context.namespace, payloadOf: context.type, reason, error: err.message },
    );
    metricMeter
      .createCounter('esign_undecodable_workflows', 'workflows', 'Workflows whose payloads a worker could not decode, by reason')
      .add(1, { reason });
  }
}
