import { FAULT_DEFAULTS, U32_MAX, VALID_MODES_TEXT, isFaultMode, type FaultSpec } from './modes.js';

export type FaultParse = { ok: true; fault: FaultSpec } | { ok: false; message: string };

const U64_MAX = 18_446_744_073_709_551_615n;
const DIGITS = /^[0-9]+$/;

/**
 * Parses the `x-sim-fault` header:
 * `<mode>[;after_chunks=<u32>][;delay_ms=<u64>][;utf8=<bool>]`.
 * Whitespace around parts and around `=` values is ignored; keys may come in any order but at most
 * once; empty parts, unknown keys and malformed values are refused. Never throws.
 */
export function parseFaultHeader(value: string): FaultParse {
  const parts = value.split(';').map((part) => part.trim());
  const mode = parts[0] ?? '';
  if (mode === '') return invalid('the mode is missing');
  if (!isFaultMode(mode)) return invalid(`unknown mode "${clip(mode)}"`);

  const fault: FaultSpec = { mode, ...FAULT_DEFAULTS };
  const seen = new Set<string>();
  for (const part of parts.slice(1)) {
    if (part === '') return invalid('empty part (stray ";")');
    const eq = part.indexOf('=');
    if (eq < 0) return invalid(`part "${clip(part)}" is not key=value`);
    const key = part.slice(0, eq).trim();
    const raw = part.slice(eq + 1).trim();
    if (seen.has(key)) return invalid(`key "${clip(key)}" given twice`);
    seen.add(key);
    switch (key) {
      case 'after_chunks': {
        if (!DIGITS.test(raw) || BigInt(raw) > BigInt(U32_MAX)) {
          return invalid(`after_chunks must be an unsigned 32-bit integer, got "${clip(raw)}"`);
        }
        fault.afterChunks = Number(raw);
        break;
      }
      case 'delay_ms': {
        if (!DIGITS.test(raw) || BigInt(raw) > U64_MAX) {
          return invalid(`delay_ms must be an unsigned 64-bit integer, got "${clip(raw)}"`);
        }
        fault.delayMs = Number(raw);
        break;
      }
      case 'utf8': {
        if (raw !== 'true' && raw !== 'false')
          return invalid(`utf8 must be true or false, got "${clip(raw)}"`);
        fault.utf8 = raw === 'true';
        break;
      }
      default:
        return invalid(`unknown key "${clip(key)}" (keys: after_chunks, delay_ms, utf8)`);
    }
  }
  return { ok: true, fault };
}

/** The message of every `invalid_fault_directive` error names the valid modes. */
export function faultDirectiveMessage(reason: string): string {
  return `invalid x-sim-fault directive: ${reason}; valid modes: ${VALID_MODES_TEXT}`;
}

function invalid(reason: string): FaultParse {
  return { ok: false, message: faultDirectiveMessage(reason) };
}

/** Echoed header fragments are cut short so a huge header cannot bloat the error body. */
function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}...` : text;
}
