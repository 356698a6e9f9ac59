import type { IncomingMessage } from 'node:http';
import { parseEchoDirective, type EchoDirective } from '../directives/echo.js';
import { faultDirectiveMessage, parseFaultHeader } from '../faults/directive.js';
import type { FaultSpec } from '../faults/modes.js';
import type { ModelRuntime, SimContext } from '../runtime.js';

export const FAULT_HEADER = 'x-sim-fault';

/** A request refused before any response byte; each endpoint renders it in its own error shape. */
export interface Refusal {
  status: number;
  message: string;
  /** The `sim_rejections_total` code (and the OpenAI error code). */
  code: string;
  param: string | null;
}

export type ResponsePath =
  | { ok: true; fault: FaultSpec; echo: undefined }
  | { ok: true; fault: undefined; echo: EchoDirective | undefined }
  | { ok: false; refusal: Refusal };

/** What the path choice reads from a parsed request, whatever its wire shape. */
export interface PathInputs {
  stream: boolean;
  /** Where echo directives are looked for; undefined when the request has no such text. */
  directiveText: string | undefined;
  /** Whether the model's `[fault]` table applies to this endpoint. */
  faultTable: boolean;
}

const NORMAL: ResponsePath = { ok: true, fault: undefined, echo: undefined };

/**
 * Which path serves the request. Precedence: the `x-sim-fault` header, then the model's `[fault]`
 * table (streaming requests of the endpoints it applies to), then an echo directive, then the
 * normal placeholder answer.
 */
export function chooseResponsePath(
  req: IncomingMessage,
  ctx: SimContext,
  runtime: ModelRuntime,
  inputs: PathInputs,
): ResponsePath {
  const header = req.headers[FAULT_HEADER];
  if (header !== undefined) {
    const refuse = (message: string): ResponsePath => ({
      ok: false,
      refusal: { status: 400, message, code: 'invalid_fault_directive', param: FAULT_HEADER },
    });
    if (!ctx.enableDirectives) {
      return refuse(
        faultDirectiveMessage(
          'fault directives are honored only when the server runs with --enable-directives',
        ),
      );
    }
    const parsed = parseFaultHeader(Array.isArray(header) ? header.join(', ') : header);
    if (!parsed.ok) return refuse(parsed.message);
    if (!inputs.stream) {
      return refuse(
        faultDirectiveMessage('fault directives apply to streaming requests only (set "stream": true)'),
      );
    }
    return { ok: true, fault: parsed.fault, echo: undefined };
  }
  if (inputs.faultTable && inputs.stream && runtime.config.fault) {
    return { ok: true, fault: runtime.config.fault, echo: undefined };
  }
  if (ctx.enableDirectives && inputs.directiveText !== undefined) {
    const echo = parseEchoDirective(inputs.directiveText);
    if (echo.found && !echo.ok) {
      return {
        ok: false,
        refusal: { status: 400, message: echo.message, code: 'invalid_echo_directive', param: null },
      };
    }
    if (echo.found) return { ok: true, fault: undefined, echo: echo.directive };
  }
  return NORMAL;
}
