// Baselines of the webhook-ingestion scenario: the HTTP ceiling of this machine (a node:http server answering 204),
// and the provider the bridge asks who owns a transaction (`GET /transactions/<id>`: completed, with the
// referenceId `bench-<id>`), answered as cheaply, so the figure is the bridge's and Temporal's.
import { createServer } from 'node:http';

const port = Number(process.env.BARE_PORT ?? 0);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const owner = req.method === 'GET' ? /^\/transactions\/([^/?]+)$/.exec(req.url ?? '') : null;
    if (owner) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: owner[1], status: 'completed', referenceId: `bench-${owner[1]}`, documents: [], participants: [] }));
      return;
    }
    res.statusCode = 204;
    res.end();
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`bare server listening on ${port}\n`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
