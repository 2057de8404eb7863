// Regressions that only a run recorded by an older version can show: its
// history is replayed with the code of the version its runs stay pinned to
// (0.1.0, which keeps the patch branches) after a message it never got then is
// inserted, as a run still open at the upgrade would receive it.
import { readFile } from 'node:fs/promises';
import { Worker } from '@temporalio/worker';
import { expect, it } from 'vitest';
import { workflowsPathOf } from './support/code-versions.js';

type Event = Record<string, unknown> & { eventId: string; eventType: string };
interface History {
  events: Event[];
}

/** Inserts `added` before the event with id `before`, renumbering every later event and every reference to one. */
function insertBefore(history: History, before: number, added: Omit<Event, 'eventId'>[]): History {
  const shift = (value: unknown, key = ''): unknown => {
    if (Array.isArray(value)) return value.map((v) => shift(v));
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shift(v, k)]));
    if (/EventId$|^eventId$/.test(key) && Number(value) >= before) return String(Number(value) + added.length);
    return value;
  };
  const events = history.events.map((e) => shift(e) as Event);
  const at = events.findIndex((e) => Number(e.eventId) === before + added.length);
  const inserted = added.map((e, i) => ({ ...e, eventId: String(before + i) }) as Event);
  return { ...history, events: [...events.slice(0, at), ...inserted, ...events.slice(at)] };
}

const payload = (value: unknown) => ({
  metadata: { encoding: Buffer.from('json/plain').toString('base64') },
  data: Buffer.from(JSON.stringify(value)).toString('base64'),
});

it('defect 2: a participant event in a run from before the progress patch is taken without spinning', async () => {
  const file = new URL('./replay/histories/0.1.0/before-progress-patch/completed-by-webhook.json', import.meta.url);
  const history = JSON.parse(await readFile(file, 'utf8')) as History;
  // The run's completion webhook names its provider ids: a participant event for the same transaction.
  const completion = history.events.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED')!;
  const attributes = completion.workflowExecutionSignaledEventAttributes as { input: { payloads: { data: string }[] } };
  const { data } = JSON.parse(Buffer.from(attributes.input.payloads[0]!.data, 'base64').toString()) as {
    data: { entity_id: string; transaction_id: string };
  };
  const at = Number(completion.eventId);
  const time = completion.eventTime;
  // The signal arrives while the run waits for signatures: a workflow task of its own, which (fixed) issues no command.
  const changed = insertBefore(history, at, [
    {
      eventTime: time,
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
      workflowExecutionSignaledEventAttributes: {
        signalName: 'esignEvent',
        input: {
          payloads: [
            payload({
              event: 'esign-participant-signed',
              entity: 'esign',
              data: { ...data, notificationId: 'participant-signed-1', participant_id: 'p-1' },
            }),
          ],
        },
        identity: 'test',
        header: {},
      },
    },
    {
      eventTime: time,
      eventType: 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
      workflowTaskScheduledEventAttributes: {
        taskQueue: { name: 'replay', kind: 'TASK_QUEUE_KIND_NORMAL' },
        startToCloseTimeout: '10s',
        attempt: 1,
      },
    },
    {
      eventTime: time,
      eventType: 'EVENT_TYPE_WORKFLOW_TASK_STARTED',
      workflowTaskStartedEventAttributes: { scheduledEventId: String(at + 1), identity: 'test', requestId: 'r' },
    },
    {
      eventTime: time,
      eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
      workflowTaskCompletedEventAttributes: { scheduledEventId: String(at + 1), startedEventId: String(at + 2), identity: 'test' },
    },
  ]);
  // Before the fix the run looped inside one activation until the deadlock detector failed its task.
  await expect(
    Worker.runReplayHistory({ workflowsPath: await workflowsPathOf('0.1.0') }, changed, 'before-progress-with-participant-event'),
  ).resolves.toBeUndefined();
});
