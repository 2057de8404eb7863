/**
 * A backend's own integration tests, without a browser: sign or decline as a participant in the provider sandbox
 * (docs/sandbox.md), named as the backend knows them, by its `referenceId` and the participant's id. It asks the
 * orchestrator for the provider's transaction id, then the sandbox's test controls (`/_sandbox/*`), as the signing
 * page would. Refused against anything but the sandbox: a real provider has no such controls, and a helper that
 * could sign there must not exist.
 */
import type { Client } from '@temporalio/client';
import { getEsignStatus } from './transactions.js';

/** The URL given is not the provider sandbox's (`/sandbox/pins` does not answer its seal pins): nothing was sent to it. */
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

/** The start of an answer's text (the sandbox's pins are a few lines): a huge or endless body is not read. */
async function headOf(res: Response, max = 16 * 1024): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  while (bytes <= max) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
  }
  await reader.cancel().catch(() => undefined);
  return bytes > max ? '' : Buffer.concat(chunks).toString('utf8');
}

export async function actInSandbox(
  client: Client,
  referenceId: string,
  participantId: string,
  options: SandboxActOptions,
): Promise<{ transactionId: string; completed?: boolean; declined?: true }> {
  const base = options.sandboxUrl.replace(/\/+$/, '');
  // Redirects are not followed, here or below: a provider redirecting `/sandbox/*` to a sandbox of its own would
  // otherwise pass the probe with the sandbox's answer, and be sent the act.
  const probe = await fetch(`${base}/sandbox/pins`, { redirect: 'manual' }).catch((err: unknown) => {
    throw new NotTheSandbox(`${base} does not answer (${(err as Error).message}): is the sandbox running (npm run dev)?`);
  });
  const pins = probe.status === 200 && probe.headers.get('content-type')?.startsWith('text/plain') ? await headOf(probe) : '';
  await probe.body?.cancel().catch(() => undefined);
  // What the sandbox serves there: its seal's pins, one `sha256/<base64>` a line. Not a status and a type alone,
  // which any catch-all page answers.
  if (!/^(?:sha256\/[A-Za-z0-9+/]{43}=\n)+$/.test(pins))
    throw new NotTheSandbox(
      `${base} is not the provider sandbox (GET /sandbox/pins answered ${probe.status}, not its pins): nothing was sent`,
    );

  const status = await getEsignStatus(client, referenceId);
  // A stuck run knows no participants (no query is answered): its reason says more than "no participant".
  if (status.phase === 'stuck' || status.phase === 'failed') throw new SandboxActRefused(`${referenceId}: ${status.summary}`);
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
      redirect: 'manual',
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
