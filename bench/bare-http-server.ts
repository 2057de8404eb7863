// Baseline of the webhook-ingestion scenario: the HTTP ceiling of this machine, a node:http server answering 204.
import { createServer } from 'node:http';

const port = Number(process.env.BARE_PORT ?? 0);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.statusCode = 204;
    res.end();
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`bare server listening on ${port}\n`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
