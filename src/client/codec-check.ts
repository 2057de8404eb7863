/**
 * Refuses a start that no worker could decrypt: a client encrypting with a codec key (ESIGN_CODEC_KEYS) that none
 * of the workers polling the task queue holds would start a workflow whose every task fails to decode, retried
 * without end while the run stays Running. Workers name the key ids they decrypt in their identity
 * (src/worker/create-worker.ts), which the server reports for the task queue's recent pollers; key ids are not
 * secret. With no such worker polling (all down, or older ones that do not say), nothing can be told and the
 * start goes ahead. A worker's yes is kept for a minute, so a busy backend asks once a minute per queue.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { aesGcmCodecOf, CODEC_KEYS_IDENTITY_TAG, CodecKeyUnknown } from '../codec/aes-gcm-codec.js';

/**
 * The client's codec key is one no worker on the task queue decrypts: fix ESIGN_CODEC_KEYS (docs/codec.md). The
 * codec's own error for a payload naming a key it lacks, so one `instanceof` covers the refusal before a start and
 * a decode that failed.
 */
export { CodecKeyUnknown };

const KEEP_MS = 60_000;
const known = new Map<string, number>();

/** The key ids a poller's identity names, or undefined when it names none (a worker that does not say). */
function keysOf(identity: string | null | undefined): string[] | undefined {
  const at = identity?.indexOf(CODEC_KEYS_IDENTITY_TAG) ?? -1;
  if (at === -1) return undefined;
  const list = identity!.slice(at + CODEC_KEYS_IDENTITY_TAG.length).split(/\s/)[0]!;
  return list === '' ? [] : list.split(',');
}

export async function assertWorkersDecrypt(client: Client, taskQueue: string): Promise<void> {
  const codec = aesGcmCodecOf(client.options?.loadedDataConverter?.payloadCodecs);
  if (!codec) return; // Plaintext: a worker that refuses it fails the run with the refusal, in clear (docs/codec.md).
  const mine = codec.activeKeyId;
  const cacheKey = `${client.options.namespace}\n${taskQueue}\n${mine}`;
  if ((known.get(cacheKey) ?? 0) > Date.now()) return;
  // A question the server will not answer (a role without DescribeTaskQueue, an outage) tells nothing: the start goes on.
  const described = await client.workflowService
    .describeTaskQueue({
      namespace: client.options.namespace,
      // A default import: the package is CommonJS, which plain Node (the CLI, a backend) cannot import by name.
      taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    })
    .catch(() => undefined);
  const pollers = described?.pollers;
  const said = (pollers ?? []).map((p) => keysOf(p.identity)).filter((k): k is string[] => k !== undefined);
  if (said.length > 0 && !said.some((keys) => keys.includes(mine))) {
    const theirs = [...new Set(said.flat())];
    throw new CodecKeyUnknown(
      `this client encrypts with codec key "${mine}", which no worker on task queue "${taskQueue}" decrypts ` +
        `(${theirs.length > 0 ? `they hold ${theirs.map((k) => `"${k}"`).join(', ')}` : 'they have no codec keys'}): ` +
        'give the workers this key first, or make the client encrypt with one of theirs (ESIGN_CODEC_KEYS, docs/codec.md)',
    );
  }
  // Kept only when a worker said it holds the key: "nobody says" (workers starting) is asked again next time.
  if (said.length > 0) known.set(cacheKey, Date.now() + KEEP_MS);
}
