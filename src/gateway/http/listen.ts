import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeListenError } from '../../lib/listen-error.js';

/** The gateway's two listeners and the options that place them. */
const LISTENERS = {
  proxy: { portOption: '--port or GATEWAY_PORT' },
  admin: { portOption: '--metrics-port or GATEWAY_METRICS_PORT' },
} as const;

export type ListenerName = keyof typeof LISTENERS;

/** A listener that could not bind: says which one and how to choose another address. */
export class ListenError extends Error {
  readonly listener: ListenerName;
  readonly host: string;
  readonly port: number;
  readonly code: string | undefined;

  constructor(listener: ListenerName, host: string, port: number, cause: unknown) {
    super(
      describeListenError(cause, {
        listener: `${listener} listener`,
        host,
        port,
        portOption: LISTENERS[listener].portOption,
        hostOption: '--host or GATEWAY_HOST',
      }),
      { cause },
    );
    this.name = 'ListenError';
    this.listener = listener;
    this.host = host;
    this.port = port;
    this.code = (cause as NodeJS.ErrnoException | undefined)?.code;
  }
}

/** Binds `server`; resolves with the bound port, or rejects with a ListenError. */
export async function listenOn(
  server: Server,
  listener: ListenerName,
  host: string,
  port: number,
): Promise<number> {
  server.listen({ host, port });
  try {
    await once(server, 'listening');
  } catch (error) {
    throw new ListenError(listener, host, port, error);
  }
  return (server.address() as AddressInfo).port;
}
