/**
 * A stand-in for kube-proxy in front of a Service: each TCP connection goes to a backend drawn at
 * random when it opens and stays there for its life, so a client's kept-alive connections, not its
 * requests, are what gets balanced. Run by bench/fleet.ts:
 *
 *   node bench/fleet/connection-balancer.ts --backends 41001,41002,41003,41004
 *
 * Logs one JSON line `{"msg":"listening","port":N}` on a loopback port the OS chose.
 */
import { connect, createServer } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { backends: { type: 'string' } } });
const backends = (values.backends ?? '').split(',').filter(Boolean).map(Number);
if (backends.length === 0 || backends.some((port) => !Number.isInteger(port) || port <= 0)) {
  console.error('--backends must be a comma-separated list of loopback ports');
  process.exit(2);
}

const server = createServer((client) => {
  const upstream = connect(backends[Math.floor(Math.random() * backends.length)]!, '127.0.0.1');
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  client.pipe(upstream).pipe(client);
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(
    JSON.stringify({ msg: 'listening', port: typeof address === 'object' && address ? address.port : 0 }),
  );
});
process.once('SIGTERM', () => process.exit(0));
