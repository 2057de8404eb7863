// The sandbox started from its environment (compose, `npm run sandbox`) refuses
// the placeholders of .env.example and weak values: a JWT secret anyone can
// read signs tokens anyone can forge, and `whsec_REPLACE_WITH_BASE64` made
// every webhook delivery fail at the bridge.
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { sandboxConfigFromEnv } from '../../packages/sandbox/src/config.js';

const strong = randomBytes(32).toString('base64');

it.each([
  ['SANDBOX_JWT_SECRET', 'REPLACE_WITH_AT_LEAST_32_CHARACTERS'],
  ['SANDBOX_JWT_SECRET', 'a'.repeat(40)],
  ['SANDBOX_ADMIN_TOKEN', 'change-me-change-me-change-me-change-me'],
  ['SANDBOX_WEBHOOK_SECRET', 'whsec_REPLACE_WITH_BASE64'],
  ['SANDBOX_WEBHOOK_SECRET', 'whsec_AAAA'],
])('refuses %s=%s at start, naming the variable and never printing the value', (variable, value) => {
  const start = () => sandboxConfigFromEnv({ [variable]: value });
  expect(start).toThrow(new RegExp(variable));
  try {
    start();
  } catch (err) {
    expect((err as Error).message).not.toContain(value);
  }
});

it('starts with random values', () => {
  const config = sandboxConfigFromEnv({
    SANDBOX_JWT_SECRET: strong,
    SANDBOX_ADMIN_TOKEN: randomBytes(32).toString('hex'),
    SANDBOX_WEBHOOK_SECRET: `whsec_${strong}`,
  });
  expect(config.jwtSecret).toBe(strong);
});
