/**
 * Repeated keys in one JSON object. `JSON.parse` keeps the last of two equal keys without a word,
 * so a configuration that sets `targets` twice would silently lose the first; the loader refuses it
 * instead. One linear pass over text that `JSON.parse` has already accepted (so the scan can trust
 * the syntax): a 1,000-alias file takes about a millisecond, where re-reading it with the YAML parser
 * took hundreds on every reload.
 */
export interface DuplicateKey {
  /** The decoded key. */
  key: string;
  /** Offset of the repeated key's opening quote. */
  offset: number;
  /** Offset of the first occurrence's opening quote. */
  firstOffset: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** Per open object: the keys seen so far (key -> offset), and whether the next string is a key. */
interface Frame {
  keys: Map<string, number> | undefined;
  expectKey: boolean;
}

/** End offset (exclusive) of the string whose opening quote is at `start`. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length; // unreachable for text JSON.parse accepted
    let backslashes = 0;
    for (let k = quote - 1; k > start && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}

/** Every repeated key of every object in `text`, which must be valid JSON. */
export function findDuplicateKeys(text: string): DuplicateKey[] {
  const duplicates: DuplicateKey[] = [];
  // Arrays get a frame with `keys: undefined` so a closing bracket pops the right level.
  const stack: Frame[] = [];
  let top: Frame | undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(text, i);
      if (top?.keys !== undefined && top.expectKey) {
        const raw = text.slice(i + 1, end - 1);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw;
        const first = top.keys.get(key);
        if (first === undefined) top.keys.set(key, i);
        else duplicates.push({ key, offset: i, firstOffset: first });
        top.expectKey = false;
      }
      i = end - 1;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      top = { keys: code === OPEN_OBJECT ? new Map() : undefined, expectKey: true };
      stack.push(top);
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      stack.pop();
      top = stack[stack.length - 1];
    } else if (code === COMMA && top !== undefined) {
      top.expectKey = true;
    }
  }
  return duplicates;
}
