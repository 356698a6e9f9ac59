/**
 * Every example in the README and docs is executed or validated here, so a copied command or
 * config works: shell commands name existing make targets, scripts, files and flags; helm commands
 * render; gateway configs validate; chart values render; JSON and TOML parse (model files load);
 * commands against a running gateway or simulator are run against real ones started as the
 * document says. Illustrations that are not meant to be copied are fenced as `text`.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { parseModelToml } from '../../src/simulator/config/load.js';
import { helmAsync, templateArgs } from '../chart/helm.js';
import { spawnGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { commandsOf, fencesOf, flagsOfHelp, scriptOf, wordsOf, type Fence } from './fences.js';

/** The documents a user reads; docs/specification/ is the specification as published, not examples. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'charts/gateway/README.md',
  'e2e/README.md',
].filter((file) => existsSync(join(ROOT, file)));

const LANGUAGES = new Set(['sh', 'yaml', 'json', 'toml', 'text']);
const fences: Fence[] = DOCUMENTS.flatMap((file) => fencesOf(file, readFileSync(join(ROOT, file), 'utf8')));
const where = (fence: Fence): string => `${fence.file}:${fence.line}`;
const shellFences = fences.filter((f) => f.lang === 'sh');

const scratch = mkdtempSync(join(tmpdir(), 'doc-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let scratchCount = 0;
function scratchFile(name: string, text: string): string {
  const path = join(scratch, `${scratchCount++}-${name}`);
  writeFileSync(path, text);
  return path;
}

function run(command: string, args: string[], timeout = 30_000): { status: number; output: string } {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', timeout });
  return { status: result.status ?? -1, output: `${result.stdout ?? ''}${result.stderr ?? ''}` };
}

const helpCache = new Map<string, { status: number; flags: Set<string> }>();
/** The long flags a program's `--help` lists (status non-zero when it has no help). */
function helpFlags(program: string[]): { status: number; flags: Set<string> } {
  const key = program.join(' ');
  let cached = helpCache.get(key);
  if (!cached) {
    const { status, output } = run(process.execPath, [...program, '--help']);
    cached = { status, flags: flagsOfHelp(output) };
    helpCache.set(key, cached);
  }
  return cached;
}

const ONE_ALIAS_VALUES =
  'config:\n  spec:\n    targets:\n      demo: { url: "http://upstream.example:8000/v1" }\n';

/**
 * The files the documents' here-documents write (`<document>:<file name>` → text), with what the
 * reader's shell would expand stood in by well-formed values: a digest for a `digest:` line, the
 * block's own assignment for `$VAR`.
 */
const writtenFiles = new Map<string, string>();
for (const fence of shellFences) {
  const script = scriptOf(fence.body);
  const assigned = new Map(
    script.commands.flatMap((c) => [...c.matchAll(/^([A-Z_][A-Z0-9_]*)=(\S+)$/g)].map((m) => [m[1]!, m[2]!])),
  );
  for (const [file, text] of script.files) {
    const expanded = text
      .split('\n')
      .map((line) =>
        line
          .replace(/\$\(.*\)/, /^\s*digest:/.test(line) ? `sha256:${'0'.repeat(64)}` : 'value')
          .replace(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g, (_m, name: string) => assigned.get(name) ?? 'value'),
      )
      .join('\n');
    writtenFiles.set(`${fence.file}:${file}`, expanded);
  }
}

const makeTargets = new Set(
  [...readFileSync(join(ROOT, 'Makefile'), 'utf8').matchAll(/^([a-z][a-z0-9-]*):/gm)].map((m) => m[1]!),
);

/** Words that name a file of the repository (a path under one of its top-level folders). */
const REPO_PATH =
  /^(?:\.\/)?(?:\.github|\.ci|bench|bin|charts|docs|e2e|examples|manifests|scripts|src|test)\/[\w./-]*$/;

/** One command of a shell block, split at pipes and `&&`, environment assignments removed. */
function segmentsOf(command: string): string[][] {
  return command
    .split(/\s(?:\||&&|;)\s/)
    .map((segment) => wordsOf(segment))
    .map((words) => {
      let i = 0;
      while (i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i]!)) i++;
      return words.slice(i);
    })
    .filter((words) => words.length > 0);
}

/** The program whose help lists the flags of `words`, or undefined when it is not a project CLI. */
function projectProgram(words: string[]): string[] | undefined {
  const [first, second, third] = words;
  if (first === 'gateway' || (first === 'node' && second === 'bin/gateway.js')) {
    const sub = first === 'gateway' ? second : third;
    return ['bin/gateway.js', ...(sub === 'validate' || sub === 'schema' ? [sub] : [])];
  }
  if (first === 'sim' || (first === 'node' && second === 'bin/sim.js')) {
    const sub = first === 'sim' ? second : third;
    return ['bin/sim.js', ...(sub === 'serve' ? [sub] : [])];
  }
  if (first === 'node' && second && /\.(ts|js|mjs)$/.test(second)) return [second];
  return undefined;
}

describe('documentation examples', () => {
  it('finds the documents and their examples', () => {
    expect(DOCUMENTS).toContain('README.md');
    expect(shellFences.length).toBeGreaterThan(5);
    expect(fences.filter((f) => f.lang === 'yaml').length).toBeGreaterThan(3);
  });

  it('labels every fenced block with a language this test checks (`text` for illustrations)', () => {
    const unlabelled = fences.filter((f) => !LANGUAGES.has(f.lang)).map((f) => `${where(f)} \`${f.lang}\``);
    expect(unlabelled).toEqual([]);
  });

  it('has no placeholder in a command meant to be copied', () => {
    const placeholders = shellFences.flatMap((fence) =>
      commandsOf(fence.body)
        .filter((command) => /(^|[\s=/:@])<[a-z][\w :.-]*>/i.test(command))
        .map((command) => `${where(fence)}: ${command}`),
    );
    expect(placeholders).toEqual([]);
  });

  it('names make targets, files and flags that exist', () => {
    const problems: string[] = [];
    for (const fence of shellFences) {
      for (const command of commandsOf(fence.body)) {
        for (const words of segmentsOf(command)) {
          const say = (problem: string): number =>
            problems.push(`${where(fence)}: ${problem} in \`${command}\``);
          for (const word of words) {
            const path = word.replace(/^[\w-]+=/, '');
            if (REPO_PATH.test(path) && !existsSync(join(ROOT, path))) say(`missing file ${path}`);
          }
          if (words[0] === 'make') {
            const targets = words.slice(1).filter((w) => !/^(?:-|\d?[<>])/.test(w) && !w.includes('='));
            for (const target of targets) if (!makeTargets.has(target)) say(`no make target ${target}`);
          }
          const program = projectProgram(words);
          if (program && existsSync(join(ROOT, program[0]!))) {
            const help = helpFlags(program);
            if (help.status !== 0) continue; // a script without --help: its path was checked
            for (const word of words) {
              const flag = /^--[a-z][\w-]*/.exec(word)?.[0];
              if (flag && flag !== '--help' && !help.flags.has(flag))
                say(`${program.join(' ')} has no flag ${flag}`);
            }
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('renders every helm install, upgrade and template of the chart', async () => {
    // A values file of the reader's own that the document does not write: one alias stands in.
    const userValues = scratchFile('my-values.yaml', ONE_ALIAS_VALUES);
    const renders: Promise<string | undefined>[] = [];
    for (const fence of shellFences) {
      for (const command of commandsOf(fence.body)) {
        for (const words of segmentsOf(command)) {
          if (words[0] !== 'helm' || !['install', 'upgrade', 'template'].includes(words[1]!)) continue;
          if (!words.includes('charts/gateway')) continue;
          const args = templateArgs({ skipTests: true });
          for (let i = 2; i < words.length; i++) {
            const word = words[i]!;
            if (['--set', '--set-string', '--set-json'].includes(word)) {
              // A value the reader supplies (`"$DIGEST"`) cannot be known here: left out.
              const assignment = words[++i]!;
              if (!assignment.includes('$')) args.push(word, assignment);
            } else if (['-f', '--values'].includes(word)) {
              const file = words[++i]!;
              const written = writtenFiles.get(`${fence.file}:${file}`);
              if (written !== undefined) args.push('--values', scratchFile('values.yaml', written));
              else if (existsSync(join(ROOT, file))) args.push('--values', join(ROOT, file));
              else args.push('--values', userValues);
            }
          }
          renders.push(
            helmAsync(args).then((r) =>
              r.status === 0 ? undefined : `${where(fence)}: \`${command}\` fails: ${r.stderr.trim()}`,
            ),
          );
        }
      }
    }
    expect(renders.length).toBeGreaterThan(0);
    expect((await Promise.all(renders)).filter(Boolean)).toEqual([]);
  });

  it('validates every YAML block: gateway configs, chart values, Kubernetes objects', async () => {
    const chartValues = parseYaml(readFileSync(join(ROOT, 'charts/gateway/values.yaml'), 'utf8')) as object;
    const valueKeys = new Set(Object.keys(chartValues));
    const baseValues = scratchFile('base-values.yaml', ONE_ALIAS_VALUES);
    const problems: (string | undefined)[] = [];
    const renders: Promise<string | undefined>[] = [];
    for (const fence of fences.filter((f) => f.lang === 'yaml')) {
      const documents = parseAllDocuments(fence.body);
      const errors = documents.flatMap((d) => d.errors.map((e) => e.message));
      if (errors.length > 0) {
        problems.push(`${where(fence)}: not YAML: ${errors.join('; ')}`);
        continue;
      }
      for (const document of documents) {
        const value = document.toJS() as Record<string, unknown> | null;
        if (value === null || typeof value !== 'object') {
          problems.push(`${where(fence)}: not a mapping`);
          continue;
        }
        if ('targets' in value || value.kind === 'GatewayConfig') {
          const file = scratchFile('config.yaml', document.toString());
          const references = /from_(file|env)/.test(fence.body) ? ['--skip-references'] : [];
          const result = run(process.execPath, ['bin/gateway.js', 'validate', ...references, file]);
          if (result.status !== 0) problems.push(`${where(fence)}: invalid gateway config: ${result.output}`);
        } else if (typeof value.apiVersion === 'string' && typeof value.kind === 'string') {
          if (!value.metadata) problems.push(`${where(fence)}: Kubernetes object without metadata`);
        } else if (Object.keys(value).every((key) => valueKeys.has(key))) {
          // A fragment of values stands beside the user's configuration: rendered on top of one.
          const file = scratchFile('values.yaml', document.toString());
          renders.push(
            helmAsync(templateArgs({ valuesFiles: [baseValues, file], skipTests: true })).then((r) =>
              r.status === 0 ? undefined : `${where(fence)}: chart values do not render: ${r.stderr.trim()}`,
            ),
          );
        } else {
          problems.push(
            `${where(fence)}: neither a gateway config, chart values nor a Kubernetes object ` +
              `(keys ${Object.keys(value).join(', ')}); fence it as text if it is a fragment`,
          );
        }
      }
    }
    problems.push(...(await Promise.all(renders)));
    expect(problems.filter(Boolean)).toEqual([]);
  });

  it('parses every JSON block (a value or JSON lines)', () => {
    const problems: string[] = [];
    for (const fence of fences.filter((f) => f.lang === 'json')) {
      try {
        JSON.parse(fence.body);
      } catch {
        for (const line of fence.body.split('\n').filter((l) => l.trim())) {
          try {
            JSON.parse(line);
          } catch (err) {
            problems.push(`${where(fence)}: ${(err as Error).message}: ${line}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('loads every TOML block as a simulator model file', () => {
    const problems: string[] = [];
    for (const fence of fences.filter((f) => f.lang === 'toml')) {
      const result = parseModelToml(fence.body, where(fence));
      if (!result.ok) problems.push(`${where(fence)}: ${result.message}`);
    }
    expect(problems).toEqual([]);
  });
});

describe("README's options table", () => {
  it('lists every gateway flag with its environment variable and default, as --help does', () => {
    const help = run(process.execPath, ['bin/gateway.js', '--help']).output;
    // The Options section, one entry per option (the Commands section names subcommands' flags).
    const entries = new Map(
      help
        .slice(help.indexOf('Options:'), help.indexOf('Commands:'))
        .split(/\n(?=\s{2}-)/)
        .map((entry) => entry.replace(/\s+/g, ' ').trim())
        .filter((entry) => entry.startsWith('-'))
        .map((entry) => [/--[a-z-]+/.exec(entry)![0], entry.replace(/"/g, '')] as const),
    );
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const rows = readme
      .split('\n')
      .filter((line) => /^\| `(-\w, )?--[a-z-]+/.test(line))
      .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |`/g, '').trim()));
    const documented = rows.map((row) => /--[a-z-]+/.exec(row[0]!)![0]);
    const listed = [...entries.keys()].filter((f) => !['--help', '--version'].includes(f));
    expect(documented.sort()).toEqual(listed.sort());
    for (const [flag, env, defaultValue] of rows) {
      const entry = entries.get(/--[a-z-]+/.exec(flag!)![0])!;
      expect(entry).toContain(`env: ${env}`);
      if (defaultValue !== 'unset' && defaultValue !== 'required')
        expect(entry).toContain(`default: ${defaultValue}`);
    }
  });
});

/** The processes a document starts before its commands against `localhost` run. */
interface Stack {
  sim?: string[];
  gatewayConfig?: string;
}

/** `make run`, `sim serve …` and `gateway -f …` in a block: what it starts (the last of each wins). */
function stackOf(fence: Fence): Stack | undefined {
  let stack: Stack | undefined;
  for (const command of commandsOf(fence.body)) {
    for (const words of segmentsOf(command)) {
      const program = projectProgram(words);
      if (words[0] === 'make' && words.includes('run')) {
        stack = { sim: [], gatewayConfig: 'examples/quickstart/config.yaml' };
      } else if (program?.[0] === 'bin/sim.js' && program[1] === 'serve') {
        const args = words.slice(words.indexOf('serve') + 1);
        // The test chooses the address: --host and --port with their values are left out.
        const own = (i: number): boolean =>
          ['--port', '--host'].includes(args[i]!) || ['--port', '--host'].includes(args[i - 1]!);
        stack = { ...stack, sim: args.filter((_w, i) => !own(i)) };
      } else if (program?.[0] === 'bin/gateway.js' && program.length === 1) {
        const at = Math.max(words.indexOf('-f'), words.indexOf('--targets'));
        if (at > 0) stack = { ...stack, gatewayConfig: words[at + 1]! };
      }
    }
  }
  return stack;
}

const LOCAL_URL = /(?:localhost|127\.0\.0\.1):(3000|8000|9090)/g;
const liveCommands: { fence: Fence; command: string; stack: Stack }[] = [];
for (const file of DOCUMENTS) {
  let stack: Stack | undefined;
  for (const fence of shellFences.filter((f) => f.file === file)) {
    stack = stackOf(fence) ?? stack;
    for (const command of commandsOf(fence.body))
      if (/^curl\b/.test(command) && /(?:localhost|127\.0\.0\.1):(3000|8000|9090)/.test(command) && stack)
        liveCommands.push({ fence, command, stack });
  }
}

/**
 * Output blocks that show a configuration's hash (`gateway_config_info{hash=...}`) show the hash of
 * the configuration the document's commands start the gateway with: the sha256 of the file's bytes,
 * which an edit of the file changes.
 */
const shownHashes: { fence: Fence; hash: string; config: string }[] = [];
for (const file of DOCUMENTS) {
  let stack: Stack | undefined;
  for (const fence of fences.filter((f) => f.file === file)) {
    if (fence.lang === 'sh') stack = stackOf(fence) ?? stack;
    if (fence.lang !== 'text' || stack?.gatewayConfig === undefined) continue;
    for (const match of fence.body.matchAll(/gateway_config_info\{hash="([0-9a-f]+)"\}/g))
      shownHashes.push({ fence, hash: match[1]!, config: stack.gatewayConfig });
  }
}

describe('configuration hashes shown in output blocks', () => {
  it('has the quickstart among them', () => {
    expect(shownHashes.some((h) => h.fence.file === 'README.md')).toBe(true);
  });

  it.each(shownHashes.map((h) => [`${where(h.fence)}: ${h.config}`, h] as const))('%s', (_name, shown) => {
    const bytes = readFileSync(join(ROOT, shown.config));
    expect(shown.hash).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});

describe('commands against a running gateway and simulator', () => {
  it('has the quickstart among them', () => {
    expect(liveCommands.some((c) => c.fence.file === 'README.md')).toBe(true);
  });

  it.each(liveCommands.map((c) => [`${where(c.fence)}: ${c.command}`, c] as const))(
    '%s',
    async (_name, { command, stack }) => {
      let sim: StartedSim | undefined;
      let gateway: Awaited<ReturnType<typeof spawnGateway>> | undefined;
      try {
        sim = await startSim(stack.sim ?? []);
        const ports: Record<string, number> = { '8000': sim.port };
        if (stack.gatewayConfig) {
          const config = readFileSync(join(ROOT, stack.gatewayConfig), 'utf8').replace(
            /(localhost|127\.0\.0\.1):8000/g,
            `127.0.0.1:${sim.port}`,
          );
          gateway = await spawnGateway(scratchFile('config.yaml', config));
          ports['3000'] = gateway.port;
          ports['9090'] = gateway.adminPort;
        }
        const local = command
          .replace(LOCAL_URL, (_match, port: string) => `127.0.0.1:${ports[port] ?? port}`)
          .replace(/^curl\b/, 'curl --fail-with-body --max-time 20');
        const result = spawnSync('bash', ['-o', 'pipefail', '-c', local], {
          encoding: 'utf8',
          timeout: 30_000,
        });
        expect(result.status, `${local}\n${result.stdout}${result.stderr}`).toBe(0);
        expect(result.stdout.length).toBeGreaterThan(0);
      } finally {
        await gateway?.program.kill();
        await sim?.stop();
      }
    },
  );
});
