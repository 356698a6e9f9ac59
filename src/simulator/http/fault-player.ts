import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { FLUSH_GRACE_MS } from '../faults/modes.js';
import type { FaultScript } from '../faults/script.js';
import { writable } from './sse.js';

/** Node timers cannot wait longer than this; a u64 delay_ms beyond it is the same as a stall. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Executes a fault script on the live response: frames with `delayMs` between them, then the
 * terminal action on the raw socket. Resolves when the script is over or the client has left.
 */
export async function playFault(
  res: ServerResponse,
  script: FaultScript,
  delayMs: number,
  log: Logger,
): Promise<void> {
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  const signal = gone.signal;
  const left = new Promise<void>((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  // Settles once the last written bytes have been handed to the kernel (or the client is gone).
  let flushed: Promise<void> = Promise.resolve();
  const send = (data: string | Buffer): boolean => {
    let accepted = true;
    flushed = new Promise<void>((resolve) => {
      accepted = res.write(data, () => resolve());
    });
    return accepted;
  };
  /**
   * Abrupt modes kill the connection only after the partial output has left the process and a
   * short grace has passed, so the client reliably receives every byte before the death.
   */
  const flushThenGrace = async (): Promise<void> => {
    await Promise.race([flushed, left]);
    await sleep(FLUSH_GRACE_MS, undefined, { signal });
  };

  try {
    let first = true;
    for (const frame of script.frames) {
      if (!first) await pause(delayMs, signal);
      first = false;
      if (!writable(res)) return;
      if (!send(frame)) await once(res, 'drain', { signal });
    }
    const terminal = script.terminal;
    switch (terminal.action) {
      case 'end':
        res.end();
        return;
      case 'stall':
        // Nothing more is sent; the slot is held until the client gives up.
        await left;
        return;
      case 'tear':
        await pause(delayMs, signal);
        if (!writable(res)) return;
        send(terminal.bytes);
        await flushThenGrace();
        res.socket?.destroy();
        return;
      case 'close':
        await flushThenGrace();
        res.socket?.destroy();
        return;
      case 'reset':
        await flushThenGrace();
        resetConnection(res, log);
        return;
    }
  } catch (err) {
    if (!signal.aborted) throw err;
    // The client left mid-script: nothing to do.
  }
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) await nextTurn(undefined, { signal });
  else await sleep(Math.min(ms, MAX_TIMER_MS), undefined, { signal });
}

/** A real TCP RST (linger 0). Degrades to a FIN, with a warning, where the handle cannot do it. */
function resetConnection(res: ServerResponse, log: Logger): void {
  const socket = res.socket;
  if (!socket) return;
  try {
    socket.resetAndDestroy();
  } catch (err) {
    log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'reset unavailable on this socket; closing with FIN',
    );
    socket.destroy();
  }
}
