import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { root } from '../bench/lib.js';

/**
 * One of the system's processes under chaos: started from a TypeScript entry
 * point, its output kept in a log file, killed and started again on demand.
 * Like a process supervisor (systemd, Kubernetes), it restarts a process that
 * exits on its own, and counts those exits for the report.
 */
export class Service {
  readonly name: string;
  #entry: string;
  #env: Record<string, string>;
  #ready: RegExp;
  #log: WriteStream;
  #child: ChildProcess | undefined;
  #wanted = false;
  #starting: Promise<void> | undefined;
  /** Exits nobody asked for (a crash, or giving up while Temporal was down). */
  unexpectedExits = 0;
  kills = 0;

  constructor(name: string, entry: string, env: Record<string, string>, ready: RegExp, logFile: string) {
    this.name = name;
    this.#entry = entry;
    this.#env = env;
    this.#ready = ready;
    this.#log = createWriteStream(logFile, { flags: 'a' });
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the process and resolves once its output matches the ready pattern; retries while it exits early. */
  start(): Promise<void> {
    this.#wanted = true;
    if (!this.#starting && this.#child && this.#child.exitCode === null && this.#child.signalCode === null) return Promise.resolve();
    this.#starting ??= this.#startUntilReady().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #startUntilReady(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#spawn();
        return;
      } catch (err) {
        if (!this.#wanted) return;
        if (attempt >= 30)
          throw new Error(`${this.name} did not become ready after ${attempt} attempts: ${(err as Error).message}`, { cause: err });
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  #spawn(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', `${root}${this.#entry}`], {
      env: { ...process.env, ...this.#env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    this.#log.write(`\n--- ${new Date().toISOString()} ${this.name} started (pid ${child.pid})\n`);
    child.stdout.pipe(this.#log, { end: false });
    child.stderr.pipe(this.#log, { end: false });
    return new Promise<void>((resolve, reject) => {
      let seen = '';
      let ready = false;
      child.stdout.on('data', (chunk: Buffer) => {
        if (ready) return;
        seen = (seen + chunk.toString()).slice(-4096);
        if (this.#ready.test(seen)) {
          ready = true;
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        this.#log.write(`--- ${new Date().toISOString()} ${this.name} exited (${signal ?? code})\n`);
        if (this.#child === child) this.#child = undefined;
        if (!ready) return reject(new Error(`exited (${signal ?? code}) before it was ready`));
        if (this.#wanted && signal !== 'SIGKILL') {
          this.unexpectedExits++;
          void this.start().catch(() => undefined);
        }
      });
    });
  }

  /** SIGKILL: no shutdown hooks, no graceful drain — what a crash or an OOM kill looks like. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    this.kills++;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    this.#wanted = false;
    await this.#starting?.catch(() => undefined);
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((r) => this.#log.end(r));
  }
}
