import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { assertStrongSecret } from '../util/secret-strength.js';
import { parseEnv, splitList } from '../util/env.js';
import type { CodecToken } from './server.js';

/** Settings of the remote codec endpoint. */
export const CodecEnv = z.object({
  ESIGN_CODEC_HOST: z.string().default('127.0.0.1'),
  ESIGN_CODEC_PORT: z.coerce.number().int().min(0).max(65535).default(4030),
  ESIGN_CODEC_CORS_ORIGINS: z.string().default('http://localhost:8233,http://127.0.0.1:8233'),
  /** One token for every namespace, decode only (kept from before per-namespace tokens; its id in the audit log is `default`). */
  ESIGN_CODEC_AUTH_TOKEN: z.string().min(1).optional(),
  /**
   * Tokens with what each may do: `<id>:<token>:<namespace>|<namespace>…|*[:decode|decode+encode]`, comma-separated
   * (or one per line in ESIGN_CODEC_TOKENS_FILE; `#` starts a comment). Decode only unless `+encode` is given.
   */
  ESIGN_CODEC_TOKENS: z.string().optional(),
  ESIGN_CODEC_TOKENS_FILE: z.string().min(1).optional(),
});

export interface CodecEndpointConfig {
  host: string;
  port: number;
  corsOrigins: string[];
  tokens: CodecToken[];
}

const HOW = 'Generate one with `openssl rand -base64 32`';

export const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1' || /^::ffff:127\./i.test(host);

/** Parses `<id>:<token>:<namespaces>[:<permissions>]` entries; `source` names the variable in errors. */
export function parseCodecTokens(text: string, source: string): CodecToken[] {
  const entries = text
    .split(/[\n,]/)
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter(Boolean);
  return entries.map((entry, i) => {
    const parts = entry.split(':');
    const [id, token, namespaces, permissions = 'decode'] = parts;
    const where = `${source} entry ${i + 1}${id ? ` ("${id}")` : ''}`;
    if (parts.length < 3 || parts.length > 4 || !id || !token || !namespaces)
      throw new Error(`${where} must be <id>:<token>:<namespace>|<namespace>…|*[:decode|decode+encode] (the id, not the token, is logged)`);
    const granted = permissions.split('+').map((p) => p.trim());
    if (!granted.includes('decode') || granted.some((p) => p !== 'decode' && p !== 'encode'))
      throw new Error(`${where}: permissions must be "decode" or "decode+encode"`);
    assertStrongSecret(`${where}'s token`, token, HOW);
    const list = namespaces
      .split('|')
      .map((n) => n.trim())
      .filter(Boolean);
    return { id, token, namespaces: list.includes('*') ? '*' : list, encode: granted.includes('encode') };
  });
}

/**
 * The codec endpoint's settings. It decrypts every payload, so it refuses to
 * start bound to anything but loopback without a token, and refuses weak or
 * placeholder tokens.
 */
export function codecConfigFromEnv(env: NodeJS.ProcessEnv = process.env): CodecEndpointConfig {
  const e = parseEnv(CodecEnv, env, 'codec endpoint');
  const invalid = (message: string) => new Error(`invalid codec endpoint configuration: ${message}`);
  const tokens: CodecToken[] = [];
  try {
    if (e.ESIGN_CODEC_AUTH_TOKEN) {
      assertStrongSecret('ESIGN_CODEC_AUTH_TOKEN', e.ESIGN_CODEC_AUTH_TOKEN, HOW);
      tokens.push({ id: 'default', token: e.ESIGN_CODEC_AUTH_TOKEN, namespaces: '*', encode: false });
    }
    if (e.ESIGN_CODEC_TOKENS) tokens.push(...parseCodecTokens(e.ESIGN_CODEC_TOKENS, 'ESIGN_CODEC_TOKENS'));
    if (e.ESIGN_CODEC_TOKENS_FILE) {
      let text: string;
      try {
        text = readFileSync(e.ESIGN_CODEC_TOKENS_FILE, 'utf8');
      } catch (err) {
        throw new Error(
          `ESIGN_CODEC_TOKENS_FILE: cannot read ${e.ESIGN_CODEC_TOKENS_FILE} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
          {
            cause: err,
          },
        );
      }
      tokens.push(...parseCodecTokens(text, 'ESIGN_CODEC_TOKENS_FILE'));
    }
  } catch (err) {
    throw invalid((err as Error).message);
  }
  const ids = tokens.map((t) => t.id);
  const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
  if (duplicate) throw invalid(`the token id "${duplicate}" is used twice (ids name tokens in the audit log)`);
  if (new Set(tokens.map((t) => t.token)).size !== tokens.length) throw invalid('two token ids share one token: give each its own');
  if (tokens.length === 0 && !isLoopbackHost(e.ESIGN_CODEC_HOST))
    throw invalid(
      `the codec endpoint decrypts every payload, so bound to ESIGN_CODEC_HOST=${e.ESIGN_CODEC_HOST} (beyond loopback) it needs a token: set ESIGN_CODEC_TOKENS (or ESIGN_CODEC_AUTH_TOKEN), or bind it to 127.0.0.1`,
    );
  return { host: e.ESIGN_CODEC_HOST, port: e.ESIGN_CODEC_PORT, corsOrigins: splitList(e.ESIGN_CODEC_CORS_ORIGINS), tokens };
}
