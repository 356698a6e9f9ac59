/**
 * Where a JSON text stops being valid. `JSON.parse` says so only for some errors ("... at position
 * 12"), never for an unexpected token, so the loader finds the offset itself to report a line and
 * column for every JSON syntax error. Returns `text.length` for an unexpected end and `undefined`
 * when the text is valid JSON.
 */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0;

  const skipWhitespace = (): void => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
      i++;
  };

  // A misspelled literal is reported at its first wrong character, as V8's message names that one.
  const literal = (word: string): boolean => {
    for (const char of word) {
      if (text[i] !== char) return false;
      i++;
    }
    return true;
  };

  const string = (): boolean => {
    i++; // opening quote
    while (i < text.length) {
      const char = text[i]!;
      if (char === '"') {
        i++;
        return true;
      }
      if (char < ' ') return false;
      if (char === '\\') {
        i++;
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) return ((i += k), false);
          i += 5;
        } else if (text[i] !== undefined && '"\\/bfnrt'.includes(text[i]!)) i++;
        else return false;
      } else i++;
    }
    return false;
  };

  const isDigit = (char: string | undefined): boolean => char !== undefined && char >= '0' && char <= '9';
  const digits = (): boolean => {
    if (!isDigit(text[i])) return false;
    while (isDigit(text[i])) i++;
    return true;
  };
  // Stops at the first character a number cannot continue with, where V8 reports the error.
  const number = (): boolean => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else if (!digits()) return false;
    if (text[i] === '.') {
      i++;
      if (!digits()) return false;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      if (!digits()) return false;
    }
    return true;
  };

  const key = (): boolean => {
    skipWhitespace();
    if (text[i] !== '"' || !string()) return false;
    skipWhitespace();
    if (text[i] !== ':') return false;
    i++;
    return true;
  };

  // A loop with an explicit stack of open containers, so deep nesting cannot exhaust the call stack.
  const closers: string[] = [];
  let expectValue = true;
  for (;;) {
    skipWhitespace();
    if (expectValue) {
      const char = text[i];
      if (char === '{' || char === '[') {
        closers.push(char === '{' ? '}' : ']');
        i++;
        skipWhitespace();
        if (text[i] === closers.at(-1)) {
          closers.pop();
          i++;
          expectValue = false;
        } else if (char === '{' && !key()) return i;
        continue;
      }
      let ok: boolean;
      if (char === '"') ok = string();
      else if (char === 't') ok = literal('true');
      else if (char === 'f') ok = literal('false');
      else if (char === 'n') ok = literal('null');
      else if (char === '-' || isDigit(char)) ok = number();
      else ok = false;
      if (!ok) return i;
      expectValue = false;
      continue;
    }
    const closer = closers.at(-1);
    if (closer === undefined) return i < text.length ? i : undefined;
    if (text[i] === closer) {
      closers.pop();
      i++;
    } else if (text[i] === ',') {
      i++;
      if (closer === '}' && !key()) return i;
      expectValue = true;
    } else return i;
  }
}
