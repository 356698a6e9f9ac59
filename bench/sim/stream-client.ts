import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** What a stream must end with on the wire: the [DONE] frame in its chunk, then the terminator. */
const END = Buffer.from('data: [DONE]\n\n\r\n0\r\n\r\n');
const OK = Buffer.from('HTTP/1.1 200 ');

export interface StreamLoopResult {
  durations: number[];
  errors: number;
}

/**
 * One keep-alive connection that streams requests back to back until the deadline. Raw sockets and
 * a tail check keep the client's cost per frame tiny, so the measurement is of the simulator
 * rather than of an HTTP client's parser.
 */
export function streamLoop(port: number, request: Buffer, deadline: number): Promise<StreamLoopResult> {
  return new Promise((resolve) => {
    const result: StreamLoopResult = { durations: [], errors: 0 };
    let socket: Socket;
    let started = 0;
    let head = true;
    let ok = false;
    let tail = Buffer.alloc(0);

    const next = (): void => {
      if (performance.now() >= deadline) {
        socket.end();
        resolve(result);
        return;
      }
      head = true;
      ok = false;
      tail = Buffer.alloc(0);
      started = performance.now();
      socket.write(request);
    };
    const open = (): void => {
      socket = connect(port, '127.0.0.1', next);
      socket.setNoDelay(true);
      socket.on('data', (data: Buffer) => {
        if (head) {
          ok = data.subarray(0, OK.length).equals(OK);
          head = false;
        }
        tail = Buffer.concat([tail, data]).subarray(-END.length);
        if (tail.equals(END)) {
          if (ok) result.durations.push(performance.now() - started);
          else result.errors++;
          next();
        }
      });
      socket.on('error', () => {
        result.errors++;
      });
      socket.on('close', () => {
        // A connection lost mid-stream counts once (in 'error' or here) and is replaced.
        if (performance.now() < deadline) {
          if (!head) result.errors++;
          open();
        } else {
          resolve(result);
        }
      });
    };
    open();
  });
}

/** The bytes of one streaming chat completion request over HTTP/1.1 keep-alive. */
export function streamRequest(port: number, body: string): Buffer {
  return Buffer.from(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
