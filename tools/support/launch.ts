import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { WORKER_NODE_FLAGS } from '../../src/worker/node-flags.js';

/** The repository's root, with a trailing slash. */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface LaunchOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /**
   * Resolves once the process's output (stdout and stderr) matches, or, for a
   * quiet server, once this probe (polled every 250 ms) says it is up.
   */
  ready: RegExp | (() => Promise<boolean>);
  /** Where the process's output also goes (a log file); it is kept in memory otherwise. */
  log?: Writable;
  /** How long the process may take to become ready. */
  timeoutMs?: number;
  /** Node flags instead of the entry's own (a benchmark comparing them). */
  nodeFlags?: readonly string[];
}

export interface Launched {
  readonly child: ChildProcess;
  /** The last 64 KiB the process printed (all of it goes to `log`, when given). */
  output(): string;
  /** Resolves with the exit code or signal once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL: no shutdown hooks, as a crash or an OOM kill. */
  kill(): Promise<void>;
}

/**
 * Starts a TypeScript entry point of this repository (or any absolute path)
 * in its own Node process and resolves once it prints its ready line. The
 * one launcher of the dev tools: benchmarks, the chaos run and tests.
 */
export function launch(entry: string, options: LaunchOptions): Promise<Launched> {
  const path = entry.startsWith('/') ? entry : `${projectRoot}${entry}`;
  const flags = options.nodeFlags ?? NODE_FLAGS[entry] ?? [];
  return launchCommand(process.execPath, [...flags, '--import', 'tsx', path], { ...options, label: entry });
}

/** Entry points that run with Node flags of their own, as they do in production. */
const NODE_FLAGS: Record<string, readonly string[]> = { 'src/worker/main.ts': WORKER_NODE_FLAGS };

/** The same for any program (the Temporal server, PostgreSQL): started, watched and stopped alike. */
export function launchCommand(
  file: string,
  args: readonly string[],
  options: LaunchOptions & { label?: string; cwd?: string },
): Promise<Launched> {
  const entry = options.label ?? file;
  const child = spawn(file, args, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let seen = '';
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const launched: Launched = {
    child,
    output: () => seen,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  return new Promise<Launched>((resolve, reject) => {
    let ready = false;
    const timer = setTimeout(() => {
      if (ready) return;
      child.kill('SIGKILL');
      reject(new Error(`${entry} was not ready within ${(options.timeoutMs ?? 60_000) / 1000} s: ${seen}`));
    }, options.timeoutMs ?? 60_000);
    const becameReady = () => {
      ready = true;
      clearTimeout(timer);
      resolve(launched);
    };
    const check = options.ready;
    const onData = (chunk: Buffer) => {
      options.log?.write(chunk);
      seen += chunk.toString();
      if (seen.length > 128 * 1024) seen = seen.slice(-64 * 1024);
      if (!ready && check instanceof RegExp && check.test(seen)) becameReady();
    };
    if (!(check instanceof RegExp)) {
      const poll = async (): Promise<void> => {
        while (!ready && child.exitCode === null && child.signalCode === null) {
          if (await check().catch(() => false)) return becameReady();
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      void poll();
    }
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((how) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`${entry} exited (${how}) before it was ready: ${seen}`));
    });
  });
}
