/** How a process reaches the provider's API, from its environment: the worker, and the bridge (which reads who owns a transaction). */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const ProviderEnv = z.object({
  /** Base URL of the provider API; the embedded provider sandbox by default. */
  ESIGN_PROVIDER_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:4010'),
  ESIGN_PROVIDER_TOKEN: z.string().min(1).optional(),
  ESIGN_PROVIDER_TOKEN_FILE: z.string().min(1).optional(),
  ESIGN_PROVIDER_CA_FILE: z.string().min(1).optional(),
});

export interface ProviderSettings {
  providerUrl: string;
  /** Read at each call: a token file may be rotated under a running process. */
  providerToken: () => string | Promise<string>;
  providerCa: string | undefined;
}

export function providerSettings(
  e: z.infer<typeof ProviderEnv>,
  processName: string,
  fallbackToken?: () => string | Promise<string>,
): ProviderSettings {
  let providerToken: () => string | Promise<string>;
  if (e.ESIGN_PROVIDER_TOKEN) {
    const token = e.ESIGN_PROVIDER_TOKEN;
    providerToken = () => token;
  } else if (e.ESIGN_PROVIDER_TOKEN_FILE) {
    const file = e.ESIGN_PROVIDER_TOKEN_FILE;
    providerToken = () => readFileSync(file, 'utf8').trim();
  } else if (fallbackToken) {
    providerToken = fallbackToken;
  } else {
    throw new Error(`invalid ${processName} configuration: set ESIGN_PROVIDER_TOKEN or ESIGN_PROVIDER_TOKEN_FILE`);
  }
  return {
    providerUrl: e.ESIGN_PROVIDER_URL,
    providerToken,
    providerCa: e.ESIGN_PROVIDER_CA_FILE ? readFileSync(e.ESIGN_PROVIDER_CA_FILE, 'utf8') : undefined,
  };
}
