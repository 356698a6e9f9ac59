/**
 * Deterministic placeholder output: token `i` of every response is the same string on every run.
 *
 * Every word carries at least one two-byte UTF-8 character (U+0080..U+07FF) so that any content
 * frame can be torn inside a character (`cut_mid_frame` with `utf8=true`) and clients' streaming
 * UTF-8 decoders are exercised on ordinary traffic too.
 */
const WORDS: readonly string[] = [
  'Café ',
  'déjà ',
  'naïve ',
  'résumé ',
  'señor ',
  'über ',
  'crème ',
  'brûlée ',
  'façade ',
  'piñata ',
  'jalapeño ',
  'smörgåsbord ',
  'fiancé ',
  'açaí ',
  'entrée ',
  'soirée ',
];

export function placeholderToken(index: number): string {
  return WORDS[index % WORDS.length]!;
}

/**
 * Byte offset of the first two-byte UTF-8 character in `text`, or -1. Used to cut one byte into
 * such a character.
 */
export function firstTwoByteCharOffset(text: string): number {
  let bytes = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0x80 && code <= 0x7ff) return bytes;
    bytes += Buffer.byteLength(char, 'utf8');
  }
  return -1;
}
