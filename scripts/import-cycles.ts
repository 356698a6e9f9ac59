// Fails when the TypeScript sources import in a circle, naming each circle found:
//   - between modules: any file under the source root reaching itself through its relative imports;
//   - between folders: a folder directly under <root>/gateway importing, directly or through other
//     such folders, a folder that imports it back (files at <root>/gateway itself are not a folder
//     and take no part).
//
//   node scripts/import-cycles.ts [source root, default src]
//
// Only relative specifiers are followed; `./x.js` resolves to x.ts the way tsc's nodenext does
// (then x.ts as written, then x/index.ts). `import type` and `export type ... from` count like any
// other import: a type-only edge is erased at run time, but it still ties the two modules' designs
// together, and the folder layering this check keeps is about which folder may know about which.
// Exits 1 with the circles on stderr, 0 with a one-line summary otherwise.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

type Graph = Map<string, Set<string>>;

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    base,
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find(isFile);
}

/** Each module's relative imports, type-only and re-exports included, as absolute paths. */
export function moduleGraph(root: string): Graph {
  const graph: Graph = new Map();
  for (const file of sourceFiles(root)) {
    const imports = new Set<string>();
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      const target = resolveSpecifier(file, fileName);
      if (target !== undefined) imports.add(target);
    }
    graph.set(file, imports);
  }
  return graph;
}

/** The folder directly under `layered` that holds `file`, or undefined for files outside one. */
function folderOf(layered: string, file: string): string | undefined {
  const path = relative(layered, file);
  if (path.startsWith('..')) return undefined;
  const parts = path.split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** Folder-to-folder imports among the folders directly under `layered`. */
export function folderGraph(modules: Graph, layered: string): Graph {
  const graph: Graph = new Map();
  for (const [file, imports] of modules) {
    const from = folderOf(layered, file);
    if (from === undefined) continue;
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of imports) {
      const to = folderOf(layered, target);
      if (to !== undefined && to !== from) edges.add(to);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one member, or a member importing itself. */
function tangles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** One shortest circle through the component's first member, staying inside the component. */
function circleThrough(graph: Graph, component: string[]): string[] {
  const members = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (!members.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

export interface Cycle {
  kind: 'module' | 'folder';
  /** Every member of the tangle. */
  members: string[];
  /** One circle inside it, first and last the same. */
  circle: string[];
}

export function findCycles(root: string): Cycle[] {
  const absoluteRoot = resolve(root);
  const modules = moduleGraph(absoluteRoot);
  const name = (file: string): string => relative(process.cwd(), file);
  const cycles: Cycle[] = tangles(modules).map((members) => ({
    kind: 'module',
    members: members.map(name),
    circle: circleThrough(modules, members).map(name),
  }));
  const layered = join(absoluteRoot, 'gateway');
  const folders = folderGraph(modules, layered);
  for (const members of tangles(folders)) {
    const label = (folder: string): string => `${name(join(layered, folder))}/`;
    cycles.push({
      kind: 'folder',
      members: members.map(label),
      circle: circleThrough(folders, members).map(label),
    });
  }
  return cycles;
}

/** For a folder circle, the imports that make up each of its steps. */
function folderStepImports(root: string, circle: string[]): string[] {
  const layered = join(resolve(root), 'gateway');
  const modules = moduleGraph(resolve(root));
  const folderName = (label: string): string => label.replace(/\/$/, '').split('/').at(-1)!;
  const lines: string[] = [];
  for (let step = 0; step + 1 < circle.length; step += 1) {
    const from = folderName(circle[step]!);
    const to = folderName(circle[step + 1]!);
    for (const [file, imports] of modules) {
      if (folderOf(layered, file) !== from) continue;
      for (const target of imports)
        if (folderOf(layered, target) === to)
          lines.push(`      ${relative(process.cwd(), file)} imports ${relative(process.cwd(), target)}`);
    }
  }
  return lines;
}

if (import.meta.main) {
  const root = process.argv[2] ?? 'src';
  if (!existsSync(root)) {
    console.error(`import cycles: no source root ${root}`);
    process.exit(2);
  }
  const cycles = findCycles(root);
  if (cycles.length === 0) {
    console.log(`import cycles: none under ${root} (modules, and folders under ${join(root, 'gateway')})`);
  } else {
    for (const cycle of cycles) {
      console.error(`import cycle between ${cycle.kind}s: ${cycle.circle.join(' -> ')}`);
      if (cycle.members.length + 1 > cycle.circle.length)
        console.error(
          `  the tangle also holds: ${cycle.members.filter((m) => !cycle.circle.includes(m)).join(', ')}`,
        );
      if (cycle.kind === 'folder') console.error(folderStepImports(root, cycle.circle).join('\n'));
    }
    process.exit(1);
  }
}
