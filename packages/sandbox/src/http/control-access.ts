import { timingSafeEqual } from 'node:crypto';
import type { SandboxConfig } from '../config.js';

/** Who may use the test controls (`/_sandbox/*`): they mint tokens for any organization and sign for anyone. */
export interface ControlAccess {
  /** Why a request is refused, or undefined when it may go on. */
  check(authorization: string | undefined): { status: 401 | 403; detail: string } | undefined;
  describe(): string;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * With SANDBOX_ADMIN_TOKEN, a request needs `Authorization: Bearer <token>`.
 * Without it, the controls answer only when the sandbox listens on loopback
 * (the dev stack, tests): bound anywhere else, they are closed.
 */
export function controlPlaneAccess(config: Pick<SandboxConfig, 'host' | 'adminToken'>): ControlAccess {
  if (config.adminToken) {
    const expected = Buffer.from(`Bearer ${config.adminToken}`);
    return {
      check(authorization) {
        const given = Buffer.from(authorization ?? '');
        if (given.length === expected.length && timingSafeEqual(given, expected)) return undefined;
        return { status: 401, detail: 'the sandbox controls need Authorization: Bearer <SANDBOX_ADMIN_TOKEN>' };
      },
      describe: () => 'open to requests bearing SANDBOX_ADMIN_TOKEN',
    };
  }
  if (LOOPBACK.has(config.host)) return { check: () => undefined, describe: () => 'open on loopback (no SANDBOX_ADMIN_TOKEN)' };
  return {
    check: () => ({
      status: 403,
      detail: `the sandbox controls are closed: it listens on ${config.host}, not loopback; set SANDBOX_ADMIN_TOKEN to use them`,
    }),
    describe: () => 'closed (not on loopback and no SANDBOX_ADMIN_TOKEN)',
  };
}
