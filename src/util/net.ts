import { createServer } from 'node:net';

/** A TCP port free on loopback right now (for a server started in another process). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A free port in [lo, hi): for servers that store their port in a narrow column (Temporal's membership, a SQL smallint). */
export async function freePortInRange(lo: number, hi: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = lo + Math.floor(Math.random() * (hi - lo));
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port between ${lo} and ${hi}`);
}
