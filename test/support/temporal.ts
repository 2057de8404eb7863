import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { temporal } from '@temporalio/proto';
import { executableFor } from '../../tools/temporal/binaries.js';
import { cliTypeOf, esignSearchAttributes } from '../../src/definitions/search-attributes.js';

/** Connections to the suite's shared dev server (started in test/setup/temporal-server.ts). */
export interface TemporalTestContext {
  client: Client;
  nativeConnection: NativeConnection;
  namespace: string;
  close(): Promise<void>;
}

export async function connectToTestServer(): Promise<TemporalTestContext> {
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    client,
    nativeConnection,
    namespace,
    async close() {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

/** A task queue name unique to one test, so tests sharing the server never steal each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * A time-skipping environment on the real test-server binary, for workflows
 * whose timers run for days. Each call starts its own server: time skipping
 * is global to a server, so tests must not share one concurrently.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: executableFor(inject('temporalTestServerPath')) },
  });
  // The test server knows no custom search attributes until they are added.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      esignSearchAttributes.map((sa) => [
        sa.name,
        {
          Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
          Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
          KeywordList: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
        }[cliTypeOf(sa)],
      ]),
    ),
  });
  return env;
}

export { freePort } from '../../tools/support/net.js';
