// What a service is reached as (src/http/same-origin.ts), for the addresses it may be bound to.
import type { Server } from 'node:net';
import { expect, it } from 'vitest';
import { reachOf } from '../../src/http/same-origin.js';

const bound = (address: string, port: number) => ({ address: () => ({ address, port, family: '' }) }) as unknown as Server;

it('on loopback: localhost, 127.0.0.1, [::1] and the bound address at its port, plus configured URLs', () => {
  expect(reachOf(bound('127.0.0.1', 4010), { https: false })()).toEqual({
    scheme: 'http',
    // Loopback names bare too: OpenSSL's HTTP client sends Host without the port, and a loopback name is never rebound.
    hosts: new Set(['localhost:4010', 'localhost', '127.0.0.1:4010', '127.0.0.1', '[::1]:4010', '[::1]']),
    origins: new Set(),
  });
  expect([...reachOf(bound('::1', 4010), { https: false })().hosts!]).toEqual([
    'localhost:4010',
    'localhost',
    '127.0.0.1:4010',
    '127.0.0.1',
    '[::1]:4010',
    '[::1]',
  ]);
  expect([...reachOf(bound('127.0.0.2', 4010), { https: false })().hosts!]).toContain('127.0.0.2:4010');
  // A default port is not written in Host.
  expect([...reachOf(bound('127.0.0.1', 443), { https: true })().hosts!]).toEqual(['localhost', '127.0.0.1', '[::1]']);
  const published = reachOf(bound('127.0.0.1', 4010), {
    https: false,
    urls: () => ['https://Sandbox.Example/base/', undefined, 'not a url'],
  })();
  expect(published.hosts).toContain('sandbox.example');
  expect(published.origins).toEqual(new Set(['https://sandbox.example']));
});

it('beyond loopback, or not listening: any Host', () => {
  for (const address of ['0.0.0.0', '::', '10.0.0.5']) expect(reachOf(bound(address, 4010), { https: false })().hosts).toBeUndefined();
  const closed = { address: () => null } as unknown as Server;
  expect(reachOf(closed, { https: false })().hosts).toBeUndefined();
});
