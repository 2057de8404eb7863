// Temporal loads a data converter's failure converter by path, with Node's own
// loader (not vitest's, not tsx's), in every process that builds a client or a
// worker from dataConverterFromEnv. The cluster tests met a converter that
// imported another of our TypeScript modules: Node could not follow it, and no
// client could be built. Checked here in a plain Node process.
import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { failureConverterPath } from '../../src/codec/data-converter.js';

it('loads by path in a plain Node process, and keeps only the plaintext refusal and the codec’s errors in clear', () => {
  const script = `
    const { failureConverter, PLAINTEXT_REFUSED_MESSAGE } = require(${JSON.stringify(failureConverterPath)});
    const { defaultPayloadConverter } = require('@temporalio/common');
    const secret = failureConverter.errorToFailure(new Error('documents[0] (Jane Roe) failed'), defaultPayloadConverter);
    const refusal = failureConverter.errorToFailure(new Error('invalid input: ' + PLAINTEXT_REFUSED_MESSAGE), defaultPayloadConverter);
    const undecodable = Object.assign(new Error('no codec key with id "k-9" (set ESIGN_CODEC_KEYS)'), { name: 'CodecKeyUnknown' });
    const codec = failureConverter.errorToFailure(undecodable, defaultPayloadConverter);
    process.stdout.write(JSON.stringify({ secret: secret.message, refusal: refusal.message, codec: codec.message, codecType: codec.applicationFailureInfo?.type }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: process.cwd(), encoding: 'utf8' })) as Record<
    string,
    string
  >;
  expect(out.secret).toBe('Encoded failure');
  expect(out.refusal).toMatch(/arrived unencrypted/);
  // A worker that cannot decode a run says why to readers without its keys, typed (docs/decisions/stuck-runs.md).
  expect(out.codec).toBe('no codec key with id "k-9" (set ESIGN_CODEC_KEYS)');
  expect(out.codecType).toBe('CodecKeyUnknown');
});
