import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { launchCommand, type Launched } from '../support/launch.js';

const run = promisify(execFile);

export interface PostgresOptions {
  /** Its own data directory (created and initialised on first start). */
  dataDir: string;
  port: number;
  user?: string;
  log?: NodeJS.WritableStream;
}

/** PostgreSQL's programs: POSTGRES_BIN_DIR, else the newest /usr/lib/postgresql/<major>/bin (Debian). */
export function postgresBinDir(): string {
  if (process.env.POSTGRES_BIN_DIR) return process.env.POSTGRES_BIN_DIR;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => /^\d+$/.test(d)) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error('PostgreSQL not found: install it (apt-get install postgresql) or set POSTGRES_BIN_DIR');
  return join(root, newest, 'bin');
}

/** util-linux's runuser lives in sbin, which a minimal PATH (cron, CI) leaves out. */
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((p) => existsSync(p)) ?? 'runuser';

/** PostgreSQL refuses to run as root: as root, its programs run as the `postgres` system user. */
function asPostgres(file: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? [RUNUSER, ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A PostgreSQL server of our own, on loopback, with a generated password
 * (SCRAM) kept in its data directory: what the Temporal cluster persists to.
 * It can be killed and started again on the same data, like a failover.
 */
export class PostgresServer {
  readonly port: number;
  readonly user: string;
  readonly #options: PostgresOptions;
  #process: Launched | undefined;
  #password = '';

  constructor(options: PostgresOptions) {
    this.#options = options;
    this.port = options.port;
    this.user = options.user ?? 'temporal';
  }

  get password(): string {
    return this.#password;
  }

  get dataDir(): string {
    return join(this.#options.dataDir, 'pgdata');
  }

  async start(): Promise<void> {
    await this.#init();
    const bin = postgresBinDir();
    const [file, args] = asPostgres(join(bin, 'postgres'), [
      '-D',
      this.dataDir,
      '-p',
      String(this.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${this.#options.dataDir}`,
      '-c',
      'max_connections=300',
    ]);
    this.#process = await launchCommand(file, args, {
      label: 'postgres',
      ready: /database system is ready to accept connections/,
      timeoutMs: 60_000,
      ...(this.#options.log ? { log: this.#options.log as never } : {}),
    });
  }

  /** A clean shutdown (SIGTERM: "smart" shutdown, then fast after the grace). */
  async stop(): Promise<void> {
    await this.#process?.stop(15_000);
    this.#process = undefined;
  }

  /**
   * SIGKILL to the postmaster and all its backends at once, as a crashed host:
   * PostgreSQL recovers from its WAL on the next start. (As root the launched
   * process is `runuser`, so the postmaster's pid comes from its lock file.)
   */
  async kill(): Promise<void> {
    const pid = Number((await readFile(join(this.dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
    if (pid > 0) {
      for (const p of [...childrenOf(pid), pid]) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await this.#process?.kill();
    this.#process = undefined;
    // The postmaster's children outlive it for a moment; the next start waits for the port.
    for (let i = 0; i < 100 && (await portOpen(this.port)); i++) await new Promise((r) => setTimeout(r, 100));
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async #init(): Promise<void> {
    const dir = this.#options.dataDir;
    const passwordFile = join(dir, 'postgres.password');
    await mkdir(dir, { recursive: true });
    if (existsSync(join(this.dataDir, 'PG_VERSION'))) {
      this.#password = (await readFile(passwordFile, 'utf8')).trim();
      return;
    }
    this.#password = randomBytes(18).toString('base64url');
    await writeFile(passwordFile, `${this.#password}\n`, { mode: 0o600 });
    if (process.getuid?.() === 0) {
      // The postgres user owns the cluster and needs its way to it: each parent gets the search bit (x), no more.
      await chown(dir, idsOf('postgres').uid, idsOf('postgres').gid);
      await chmod(dir, 0o700);
      for (let parent = dirname(dir); parent !== dirname(parent); parent = dirname(parent)) {
        const { mode } = await stat(parent);
        if ((mode & 0o001) === 0) await chmod(parent, (mode & 0o7777) | 0o001);
      }
    }
    const pwfile = join(dir, '.pw');
    await writeFile(pwfile, this.#password, { mode: 0o600 });
    if (process.getuid?.() === 0) await chown(pwfile, idsOf('postgres').uid, idsOf('postgres').gid);
    try {
      const [file, args] = asPostgres(join(postgresBinDir(), 'initdb'), [
        '-D',
        this.dataDir,
        '-U',
        this.user,
        '--auth=scram-sha-256',
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
      ]);
      await run(file, args);
    } finally {
      await rm(pwfile, { force: true });
    }
  }
}

/** A system user's uid and gid, from /etc/passwd. */
function idsOf(user: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`no system user "${user}": is PostgreSQL installed?`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fields after the command name (which may hold spaces): state, then the parent's pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}
