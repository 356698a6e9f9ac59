/** Which listener failed to bind, and the options that choose its address. */
export interface ListenerTarget {
  /** `proxy listener`, `admin listener`, or empty for a program with one listener. */
  readonly listener: string;
  readonly host: string;
  readonly port: number;
  /** How to choose another port, e.g. `--port or GATEWAY_PORT`. */
  readonly portOption: string;
  /** How to choose another address, e.g. `--host or GATEWAY_HOST`. */
  readonly hostOption: string;
}

/**
 * A failed bind as one line a person can act on: what is wrong with which listener and the option
 * that changes it. The system error's own text (`listen EADDRINUSE: address already in use ...`)
 * names neither.
 */
export function describeListenError(error: unknown, target: ListenerTarget): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const which = target.listener === '' ? '' : ` (${target.listener})`;
  const newPort = `choose another with ${target.portOption}`;
  const newHost = `choose another with ${target.hostOption}`;
  switch (code) {
    case 'EADDRINUSE':
      return `port ${target.port} is already in use${which}; ${newPort}`;
    case 'EACCES':
      return `no permission to listen on port ${target.port}${which}: ports below 1024 need privileges; ${newPort}`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${target.host}${which}: no interface of this machine has that address; ${newHost}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on ${target.host}${which}: the host name does not resolve; ${newHost}`;
    default: {
      const message = error instanceof Error ? error.message : String(error);
      return `cannot listen on ${target.host}:${target.port}${which}: ${message}`;
    }
  }
}
