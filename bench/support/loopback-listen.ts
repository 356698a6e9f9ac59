/**
 * Preloaded into Portkey's gateway (`node --import`): its start script listens on every interface
 * and has no option for the address. This binds its listener to 127.0.0.1 on an OS-chosen port
 * instead, and reports the port as the benchmark's own services do, as a JSON line on stderr
 * (after a newline: Portkey's start-up spinner leaves its stdout line unterminated).
 */
import { Server } from 'node:net';

const listen = Server.prototype.listen;
let reported = false;

Server.prototype.listen = function (this: Server, ...args: unknown[]): Server {
  const callback = args.find((arg): arg is () => void => typeof arg === 'function');
  this.once('listening', () => {
    const address = this.address();
    if (reported || address === null || typeof address === 'string') return;
    reported = true;
    process.stderr.write(
      `\n${JSON.stringify({ msg: 'listening', listener: 'proxy', port: address.port })}\n`,
    );
  });
  return listen.call(this, { port: 0, host: '127.0.0.1' }, callback);
} as typeof Server.prototype.listen;
