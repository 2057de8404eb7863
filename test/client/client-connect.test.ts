// A backend connects through the client package's connectEsignClient: configured from the environment like every
// process of the orchestrator, and, when Temporal is not there, an error naming the address and what to try
// instead of the SDK's bare "failed to connect" (issue 40).
import { expect, inject, it } from 'vitest';
import { connectEsignClient, TemporalUnreachable } from '../../src/client/connect.js';
import { getEsignStatus } from '../../src/client/transactions.js';

it('refuses an address where nothing listens, naming it and the variable to set', async () => {
  const refused = connectEsignClient({ address: '127.0.0.1:9', connectTimeoutMs: 2_000 }, {});
  await expect(refused).rejects.toBeInstanceOf(TemporalUnreachable);
  await expect(refused).rejects.toThrow(/cannot reach Temporal at 127\.0\.0\.1:9 .*TEMPORAL_ADDRESS/);
});

it('connects to the address TEMPORAL_ADDRESS names, in its namespace, ready for the package', async () => {
  const client = await connectEsignClient({}, { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: 'default' });
  try {
    expect(client.options.namespace).toBe('default');
    await expect(getEsignStatus(client, `no-such-${Date.now()}`)).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
  } finally {
    await client.connection.close();
  }
});
