/**
 * A backend's own integration tests, without a browser: sign or decline as a participant in the provider sandbox
 * (docs/sandbox.md), named as the backend knows them, by its `referenceId` and the participant's id. It asks the
 * orchestrator for the provider's transaction id, then the sandbox's test controls (`/_sandbox/*`), as the signing
 * page would. Refused against anything but the sandbox: a real provider has no such controls, and a helper that
 * could sign there must not exist.
 */
import type { Client } from '@temporalio/client';
import { getEsignStatus } from './transactions.js';

/** The URL given is not the provider sandbox's (it serves no `/sandbox/pins`): nothing was sent to it. */
export class NotTheSandbox extends Error {
  override readonly name = 'NotTheSandbox';
}

/** The sandbox or the orchestrator refused the act (an unknown participant, a transaction not yet created or not signable). */
export class SandboxActRefused extends Error {
  override readonly name = 'SandboxActRefused';
}

export interface SandboxActOptions {
  /** The sandbox's base URL, e.g. `http://127.0.0.1:4010` under `npm run dev`. */
  sandboxUrl: string;
  /** SANDBOX_ADMIN_TOKEN, when the sandbox has one (beyond loopback it must). */
  adminToken?: string;
  /** Decline instead of sign, with this reason. */
  decline?: { reason?: string };
}

export async function actInSandbox(
  client: Client,
  referenceId: string,
  participantId: string,
  options: SandboxActOptions,
): Promise<{ transactionId: string; completed?: boolean; declined?: true }> {
  const base = options.sandboxUrl.replace(/\/+$/, '');
  const probe = await fetch(`${base}/sandbox/pins`).catch((err: unknown) => {
    throw new NotTheSandbox(`${base} does not answer (${(err as Error).message}): is the sandbox running (npm run dev)?`);
  });
  await probe.body?.cancel();
  if (probe.status !== 200 || !probe.headers.get('content-type')?.startsWith('text/plain'))
    throw new NotTheSandbox(`${base} is not the provider sandbox (GET /sandbox/pins answered ${probe.status}): nothing was sent`);

  const status = await getEsignStatus(client, referenceId);
  if (!status.transactionId)
    throw new SandboxActRefused(`${referenceId} has no provider transaction yet (phase ${status.phase}): wait for awaiting_signatures`);
  if (!status.participants.some((p) => p.id === participantId))
    throw new SandboxActRefused(
      `${referenceId} has no participant ${participantId} (it has ${status.participants.map((p) => p.id).join(', ')})`,
    );
  const act = options.decline ? 'decline' : 'sign';
  const res = await fetch(
    `${base}/_sandbox/transactions/${encodeURIComponent(status.transactionId)}/participants/${encodeURIComponent(participantId)}/${act}`,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.adminToken ? { authorization: `Bearer ${options.adminToken}` } : {}),
      },
      body: JSON.stringify(options.decline?.reason !== undefined ? { reason: options.decline.reason } : {}),
    },
  );
  const text = await res.text();
  if (!res.ok) {
    let detail = text;
    try {
      detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
    } catch {
      // not problem+json: the text as it came
    }
    throw new SandboxActRefused(`the sandbox refused to ${act} for ${participantId}: HTTP ${res.status}: ${detail}`);
  }
  return { transactionId: status.transactionId, ...(JSON.parse(text) as { completed?: boolean; declined?: true }) };
}
