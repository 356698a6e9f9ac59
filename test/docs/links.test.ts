/**
 * The documentation's links: every relative link of README.md, docs/ and the chart README points
 * at a file of the repository and, with a fragment, at a heading of that file (anchors as GitHub
 * generates them); the specification is cited by link, never as a bare "spec 4.4" or a path
 * outside the repository.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const DOCS = ['README.md', 'charts/gateway/README.md', ...markdownFiles('docs')];

/** The text outside fenced code blocks and inline code spans. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/``[^`\n]*``|`[^`\n]*`/g, '');
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a Markdown file, numbered as GitHub numbers repeated headings. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutFences = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const line of withoutFences.split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

function links(file: string): Link[] {
  const text = prose(readFileSync(join(ROOT, file), 'utf8'));
  const out: Link[] = [];
  text.split('\n').forEach((lineText, i) => {
    for (const m of lineText.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      out.push({ file, line: i + 1, target: m[1]! });
    }
  });
  // Reference-style definitions: [name]: target
  for (const m of text.matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/gm)) out.push({ file, line: 0, target: m[1]! });
  return out;
}

function brokenLink({ file, target }: Link): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:
  const [path, fragment] = target.split('#', 2) as [string, string | undefined];
  const resolved = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURI(path));
  if (!resolved.startsWith(ROOT + '/') && resolved !== ROOT) return 'points outside the repository';
  if (!existsSync(resolved)) return `${relative(ROOT, resolved)} does not exist`;
  if (fragment === undefined || fragment === '') return undefined;
  if (!resolved.endsWith('.md')) return undefined;
  if (!anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(fragment))) {
    return `no heading #${fragment} in ${relative(ROOT, resolved)}`;
  }
  return undefined;
}

describe('documentation links', () => {
  it('the anchors follow GitHub', () => {
    expect(slug('4.4 Routing and request handling rules')).toBe('44-routing-and-request-handling-rules');
    expect(slug('4.6 Standalone response sanitization (`sanitize_response: true`)')).toBe(
      '46-standalone-response-sanitization-sanitize_response-true',
    );
    expect(slug('Images: pin by digest')).toBe('images-pin-by-digest');
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n## A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it.each(DOCS)('%s: every relative link resolves to a file and a heading', (file) => {
    const broken = links(file).flatMap((link) => {
      const why = brokenLink(link);
      return why ? [`${file}:${link.line}: (${link.target}) ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it.each(DOCS)(
    '%s: cites the specification by link, never a bare section number or a missing file',
    (file) => {
      const text = prose(readFileSync(join(ROOT, file), 'utf8'));
      const bare = text
        .split('\n')
        .map((line, i) => ({ line, n: i + 1 }))
        .filter(
          ({ line }) =>
            /\bspec(?:\s+section)?\s+\d/i.test(line) ||
            /(?<![\w/])spec\/(?:gateway|simulator)\.md/.test(line),
        )
        .map(({ line, n }) => `${file}:${n}: ${line.trim()}`);
      expect(bare).toEqual([]);
      expect(text).not.toMatch(/\.\.\/shared|\/work\//);
    },
  );
});
