import { readFileSync } from 'node:fs';

/** One fenced code block of a Markdown file. */
export interface Fence {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word (`sh`, `yaml`, …), empty when the fence has none. */
  lang: string;
  body: string;
}

/** Every fenced block of `file`, indentation of an indented fence removed from its lines. */
export function fencesOf(file: string, text = readFileSync(file, 'utf8')): Fence[] {
  const fences: Fence[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, marker, lang] = open as unknown as [string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const current = lines[j]!;
      if (current.trim().startsWith(marker) && current.trim().replace(/[`~]/g, '') === '') break;
      body.push(current.startsWith(indent) ? current.slice(indent.length) : current.trimStart());
    }
    fences.push({ file, line: i + 1, lang: lang.toLowerCase(), body: body.join('\n') });
    i = j;
  }
  return fences;
}

/**
 * The commands of a shell block: comment lines and trailing comments dropped, backslash
 * continuations joined. A `#` only starts a comment at the start of a word outside quotes.
 */
export function commandsOf(body: string): string[] {
  return scriptOf(body).commands;
}

/** A shell block: its commands, and the files its `cat > file <<EOF` here-documents write. */
export interface Script {
  commands: string[];
  /** File name → the here-document's text (unexpanded). */
  files: Map<string, string>;
}

export function scriptOf(body: string): Script {
  const commands: string[] = [];
  const files = new Map<string, string>();
  let current = '';
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = stripComment(lines[i]!).trimEnd();
    const heredoc = /<<-?\s*['"]?(\w+)['"]?/.exec(line);
    if (heredoc) {
      const end = lines.findIndex((l, j) => j > i && l.trim() === heredoc[1]);
      const text = lines.slice(i + 1, end < 0 ? undefined : end).join('\n') + '\n';
      const target = /(?:^|\s)>\s*(\S+)/.exec(line.replace(heredoc[0], ''))?.[1];
      if (target) files.set(target, text);
      commands.push((current + line).trim().replace(/\s+/g, ' '));
      current = '';
      i = end < 0 ? lines.length : end;
      continue;
    }
    if (line.endsWith('\\')) {
      current += line.slice(0, -1) + ' ';
      continue;
    }
    current += line;
    if (current.trim()) commands.push(current.trim().replace(/\s+/g, ' '));
    current = '';
  }
  if (current.trim()) commands.push(current.trim());
  return { commands, files };
}

function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) {
      return line.slice(0, i);
    }
  }
  return line;
}

/** Splits a command into words, honouring single and double quotes (no expansion). */
export function wordsOf(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | null = null;
  let inWord = false;
  for (const c of command) {
    if (quote) {
      if (c === quote) quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The `--flag` names of a help text (the long option of each option line). */
export function flagsOfHelp(help: string): Set<string> {
  return new Set([...help.matchAll(/(?:^|[\s,[])(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]!));
}
