import { createWriteStream, type WriteStream } from 'node:fs';
import { launch, type Launched } from './launch.js';

/**
 * One of the system's processes under chaos or in the cluster: started with the tools'
 * launcher, its output kept in a log file, killed and started again on
 * demand. Like a process supervisor (systemd, Kubernetes), it restarts a
 * process that exits on its own, and counts those exits for the report.
 */
export class Service {
  readonly name: string;
  #entry: string;
  #env: Record<string, string>;
  #ready: RegExp;
  #log: WriteStream;
  #process: Launched | undefined;
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
    return this.#process?.child.pid;
  }

  /** Changes the environment from the next start on, a restart after a crash included, as editing a unit file would. */
  setEnv(changes: Record<string, string>): void {
    this.#env = { ...this.#env, ...changes };
  }

  /** Starts the process and resolves once it is ready; retries while it exits early. */
  start(): Promise<void> {
    this.#wanted = true;
    const child = this.#process?.child;
    if (!this.#starting && child && child.exitCode === null && child.signalCode === null) return Promise.resolve();
    this.#starting ??= this.#startUntilReady().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #startUntilReady(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.#log.write(`\n--- ${new Date().toISOString()} ${this.name} starting\n`);
      try {
        const launched = await launch(this.#entry, { env: this.#env, ready: this.#ready, log: this.#log, timeoutMs: 120_000 });
        this.#process = launched;
        void launched.exited.then((how) => {
          this.#log.write(`--- ${new Date().toISOString()} ${this.name} exited (${how})\n`);
          if (this.#process === launched) this.#process = undefined;
          if (this.#wanted && how !== 'SIGKILL') {
            this.unexpectedExits++;
            void this.start().catch(() => undefined);
          }
        });
        return;
      } catch (err) {
        if (!this.#wanted) return;
        if (attempt >= 30)
          throw new Error(`${this.name} did not become ready after ${attempt} attempts: ${(err as Error).message}`, { cause: err });
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** SIGKILL: no shutdown hooks, no graceful drain — what a crash or an OOM kill looks like. */
  async kill(): Promise<void> {
    const running = this.#process;
    if (!running || running.child.exitCode !== null) return;
    this.kills++;
    await running.kill();
  }

  async stop(): Promise<void> {
    this.#wanted = false;
    await this.#starting?.catch(() => undefined);
    await this.#process?.stop();
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((r) => this.#log.end(r));
  }
}
