/** The eleven fault modes (spec 4.3), in the order the specification lists them. */
export const FAULT_MODES = [
  'cut_between_frames',
  'cut_mid_frame',
  'reset',
  'stall',
  'error_envelope_200',
  'error_400_in_sse',
  'no_done',
  'no_usage',
  'cancelled_499',
  'mid_reasoning',
  'mid_tool_call',
] as const;

export type FaultMode = (typeof FAULT_MODES)[number];

/** One parsed fault trigger, from the `x-sim-fault` header or a model's `[fault]` table. */
export interface FaultSpec {
  mode: FaultMode;
  /** Content-bearing frames sent before the fault fires. */
  afterChunks: number;
  /** Pause between frames, milliseconds. */
  delayMs: number;
  /** `cut_mid_frame` only: cut one byte into a two-byte UTF-8 character. */
  utf8: boolean;
}

export const FAULT_DEFAULTS = { afterChunks: 3, delayMs: 10, utf8: false } as const;

/** Abrupt modes wait this long after the last byte so the partial output reaches the wire. */
export const FLUSH_GRACE_MS = 25;

export const U32_MAX = 4_294_967_295;

export function isFaultMode(value: string): value is FaultMode {
  return (FAULT_MODES as readonly string[]).includes(value);
}

export const VALID_MODES_TEXT = FAULT_MODES.join(', ');

/** Canonical header text of a spec, every part spelled out (logs, tests). */
export function formatFault(spec: FaultSpec): string {
  return `${spec.mode};after_chunks=${spec.afterChunks};delay_ms=${spec.delayMs};utf8=${spec.utf8}`;
}
