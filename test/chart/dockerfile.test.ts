/**
 * The Dockerfile, checked structurally (hadolint cannot be installed here: it is published on
 * GitHub releases and PyPI only; the release and e2e workflows run hadolint itself). The rules are
 * the ones the image must keep: pinned-by-digest bases through build arguments, a multi-stage build
 * whose runtime is distroless Node 24 as uid 65532, production dependencies from the lockfile, an
 * exec-form entrypoint so SIGTERM reaches node, and a build context that contains what the build copies.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHIPPED_ENV, SHIPPED_NODE_ARGS } from '../../bench/support/services.ts';
import { ROOT, findObject, render } from './helm.ts';

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Instructions with continuation lines joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) return;
    if (pending === '') start = index + 1;
    if (line.startsWith('#')) return; // comment inside a continued instruction
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const match = /^([A-Za-z]+)\s+(.*)$/s.exec(full);
    if (!match) throw new Error(`Dockerfile line ${start}: cannot parse "${full}"`);
    out.push({ keyword: match[1]!.toUpperCase(), args: match[2]!, line: start });
  });
  if (pending !== '') throw new Error('Dockerfile ends inside a continued instruction');
  return out;
}

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const instructions = parseDockerfile(dockerfile);

/** Global ARGs (before the first FROM) with their defaults. */
const globalArgs = new Map<string, string>();
for (const i of instructions) {
  if (i.keyword === 'FROM') break;
  if (i.keyword === 'ARG') {
    const [name, ...value] = i.args.split('=');
    globalArgs.set(name!.trim(), value.join('=').trim());
  }
}

interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}
const stages: Stage[] = [];
for (const i of instructions) {
  if (i.keyword === 'FROM') {
    const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(i.args);
    if (!m) throw new Error(`FROM on line ${i.line}: cannot parse`);
    stages.push({ name: m[2] ?? String(stages.length), from: m[1]!, instructions: [] });
  } else stages.at(-1)?.instructions.push(i);
}
const runtime = stages.at(-1)!;
const only = (stage: Stage, keyword: string): Instruction[] =>
  stage.instructions.filter((i) => i.keyword === keyword);

describe('Dockerfile', () => {
  it('is a multi-stage build: compile, production dependencies, runtime', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'deps', 'runtime']);
  });

  it('takes every base image from a build argument pair <IMAGE> + <IMAGE>_DIGEST', () => {
    for (const stage of stages) {
      const m = /^\$\{(\w+)\}\$\{(\w+)_DIGEST:\+@\}\$\{\2_DIGEST\}$/.exec(stage.from);
      expect(m, `stage ${stage.name}: FROM ${stage.from}`).not.toBeNull();
      expect(m![1]).toBe(m![2]);
      const image = globalArgs.get(m![1]!);
      const digest = globalArgs.get(`${m![1]!}_DIGEST`);
      expect(image, `ARG ${m![1]}`).toBeDefined();
      expect(digest, `ARG ${m![1]}_DIGEST`).toBeDefined();
      // A tag, never latest; a digest, when set, in the only valid form.
      expect(image).toMatch(/^[\w./-]+:[\w.-]+$/);
      expect(image).not.toMatch(/:latest$/);
      expect(digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    }
  });

  it('says how the pinned digests are refreshed', () => {
    expect(dockerfile).toContain('.github/scripts/pin-base-images.sh');
    expect(existsSync(join(ROOT, '.github/scripts/pin-base-images.sh'))).toBe(true);
  });

  it('runs on distroless Node 24 as the non-root uid 65532, without a shell step', () => {
    expect(globalArgs.get('RUNTIME_IMAGE')).toBe('gcr.io/distroless/nodejs24-debian12:nonroot');
    expect(globalArgs.get('BUILD_IMAGE')).toMatch(/^docker\.io\/library\/node:24-/);
    expect(only(runtime, 'USER').map((i) => i.args)).toEqual(['65532:65532']);
    expect(only(runtime, 'RUN')).toEqual([]); // distroless has no shell
    expect(only(runtime, 'SHELL')).toEqual([]);
  });

  it('starts the gateway in exec form so SIGTERM reaches node (PID 1)', () => {
    const entrypoint = only(runtime, 'ENTRYPOINT');
    expect(entrypoint).toHaveLength(1);
    expect(JSON.parse(entrypoint[0]!.args)).toEqual(['/nodejs/bin/node', '/app/bin/gateway.js']);
    expect(only(runtime, 'CMD')).toEqual([]);
    expect(only(runtime, 'STOPSIGNAL').map((i) => i.args)).toEqual(['SIGTERM']);
  });

  it('installs from the lockfile: all dependencies to compile, production ones to run', () => {
    const runs = (name: string): string =>
      stages
        .find((s) => s.name === name)!
        .instructions.filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join('\n');
    expect(runs('build')).toMatch(/\bnpm ci\b/);
    expect(runs('build')).toContain('tsc -p tsconfig.build.json');
    expect(runs('deps')).toMatch(/\bnpm ci --omit=dev\b/);
    expect(dockerfile).not.toMatch(/\bnpm install\b/);
  });

  it('copies what the programs need at runtime, from the right stages', () => {
    const copies = only(runtime, 'COPY').map((i) => i.args);
    expect(copies).toEqual([
      '--from=deps /app/node_modules ./node_modules',
      '--from=build /src/dist ./dist',
      'package.json ./', // --version reads it
      'bin ./bin',
    ]);
    expect(only(runtime, 'WORKDIR').map((i) => i.args)).toEqual(['/app']);
    for (const i of instructions.filter((x) => x.keyword === 'COPY')) {
      const from = /--from=(\S+)/.exec(i.args)?.[1];
      if (from)
        expect(
          stages.map((s) => s.name),
          `COPY on line ${i.line}`,
        ).toContain(from);
    }
    expect(instructions.filter((i) => i.keyword === 'ADD')).toEqual([]);
  });

  it('exposes the chart default ports', () => {
    expect(only(runtime, 'EXPOSE').map((i) => i.args)).toEqual(['3000 9090']);
  });

  it('.dockerignore keeps the context to what the build copies', () => {
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const fromContext = instructions
      .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    for (const source of fromContext) expect(allowed, `COPY ${source}`).toContain(source);
    for (const path of allowed) expect(existsSync(join(ROOT, path)), path).toBe(true);
    expect(allowed).not.toContain('node_modules');
    expect(allowed).not.toContain('dist');
  });

  it('the chart runs both programs from the paths the image has', () => {
    expect(existsSync(join(ROOT, 'bin/gateway.js'))).toBe(true);
    expect(existsSync(join(ROOT, 'bin/sim.js'))).toBe(true);
    const deployment = findObject(
      render({ setJson: { simulator: { sidecar: { enabled: true } } } }),
      'Deployment',
    )!;
    const spec = (
      deployment.spec as {
        template: { spec: { initContainers: { command: string[] }[]; containers: { command?: string[] }[] } };
      }
    ).template.spec;
    expect(spec.initContainers[0]!.command.slice(0, 2)).toEqual(['/nodejs/bin/node', '/app/bin/sim.js']);
    expect(spec.containers[0]!.command).toBeUndefined(); // the image entrypoint runs the gateway
  });

  it('ships one set of Node.js flags and malloc setting: image ENV, chart gateway.nodeOptions, make run, benchmark', () => {
    const env = new Map(
      only(runtime, 'ENV')
        .flatMap((i) => i.args.split(/\s+/))
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const),
    );
    const imageFlags = env.get('NODE_OPTIONS');
    expect(imageFlags).toMatch(/^--max-semi-space-size=\d+$/);
    expect(imageFlags).toBe(SHIPPED_NODE_ARGS.join(' '));

    const container = (rendered: ReturnType<typeof render>) =>
      (
        findObject(rendered, 'Deployment')!.spec as {
          template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } };
        }
      ).template.spec.containers.find((c) => c.name === 'gateway')!;
    const nodeOptions = (rendered: ReturnType<typeof render>) =>
      container(rendered).env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    const withNodeOptions = (value?: string) =>
      render({
        setJson: {
          simulator: { sidecar: { enabled: true } },
          ...(value === undefined ? {} : { gateway: { nodeOptions: value } }),
        },
      });
    expect(nodeOptions(withNodeOptions())).toBe(imageFlags);
    expect(nodeOptions(withNodeOptions('--max-semi-space-size=8'))).toBe('--max-semi-space-size=8');
    // Empty: no NODE_OPTIONS from the chart (the image's ENV still applies).
    expect(nodeOptions(withNodeOptions(''))).toBeUndefined();
    // `make run` defaults to the same flags and malloc setting; the benchmark runs with both.
    const quickstart = readFileSync(join(ROOT, 'scripts/run-quickstart.sh'), 'utf8');
    expect(quickstart).toContain(`NODE_OPTIONS=\${NODE_OPTIONS:-${imageFlags}}`);
    for (const [name, value] of Object.entries(SHIPPED_ENV)) {
      expect(env.get(name), name).toBe(value);
      expect(quickstart).toContain(`${name}=\${${name}:-${value}}`);
    }
  });

  it('passes hadolint where it is installed', (ctx) => {
    const result = spawnSync('hadolint', [join(ROOT, 'Dockerfile')], { encoding: 'utf8' });
    if (result.error)
      return ctx.skip('hadolint is not installed here; the structural checks above stand in for it');
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
