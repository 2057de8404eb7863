import { createServer } from 'node:net';

/**
 * Ports below the kernel's ephemeral range (32768–60999 on Linux). A port the
 * OS hands out for `listen(0)` lies inside that range, so between choosing it
 * and a child process binding it, any outgoing connection (PostgreSQL's pool,
 * gRPC to Temporal) may take it as its source port and keep it for minutes:
 * the child then fails with EADDRINUSE on every retry. CI saw exactly that for
 * a cluster bridge.
 */
const LOW = 10_000;
const HIGH = 32_000;
/** Ports this process has handed out: never the same one twice, even before its server binds. */
const given = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A TCP port free on loopback right now (for a server started in another process). */
export function freePort(): Promise<number> {
  return freePortInRange(LOW, HIGH);
}

/** A free port in [lo, hi): for servers that store their port in a narrow column (Temporal's membership, a SQL smallint). */
export async function freePortInRange(lo: number, hi: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = lo + Math.floor(Math.random() * (hi - lo));
    if (given.has(port)) continue;
    given.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${lo} and ${hi}`);
}
