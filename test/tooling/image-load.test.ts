/**
 * The registry-less install of docs/operations.md, as written: `make image-load` (scripts/image-load.sh)
 * imports the archive into containerd and names the image by its digest too, and the documented
 * `helm install` with the two lines it prints renders pods pinned to that name that never pull.
 * containerd is a fake `ctr` here, recording what it is asked and answering `images ls` as ctr
 * does; the real-cluster suite loads its images through the same target into a real containerd.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { helmAsync, templateArgs } from '../chart/helm.ts';
import { commandsOf, fencesOf, wordsOf } from '../docs/fences.ts';
import { ROOT, removeLater, scratchDir, toolFarm, writeExecutable } from './support.ts';

const DIGEST = `sha256:${'ab'.repeat(32)}`;
const scratch: string[] = [];
const sockets: Server[] = [];
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  removeLater(scratch)();
});

/** A scratch machine: a fake ctr on PATH (and nothing else of containerd), a listening socket. */
async function machine(): Promise<{ dir: string; bin: string; socket: string; calls: string }> {
  const dir = scratchDir('image-load');
  scratch.push(dir);
  const bin = toolFarm(join(dir, 'bin'));
  const calls = join(dir, 'ctr.calls');
  writeExecutable(
    join(bin, 'ctr'),
    `#!/bin/bash
echo "$*" >>${calls}
# ctr --address SOCKET -n k8s.io images VERB ...
case $6 in
  ls) printf 'REF TYPE DIGEST SIZE PLATFORMS LABELS\\n%s application/vnd.oci.image.manifest.v1+json ${DIGEST} 61.2 MiB linux/amd64 -\\n' "\${7#name==}" ;;
esac
`,
  );
  const socket = join(dir, 'containerd.sock');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  sockets.push(server);
  return { dir, bin, socket, calls };
}

function imageLoad(bin: string, env: Record<string, string>) {
  const result = spawnSync(join(bin, 'bash'), [join(ROOT, 'scripts/image-load.sh')], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: bin, ...env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The documented recipe's `helm install`, as words, with what the reader's shell would expand. */
function documentedInstall(printed: Record<string, string>): string[] {
  const fence = fencesOf('docs/operations.md', readFileSync(join(ROOT, 'docs/operations.md'), 'utf8')).find(
    (f) => f.lang === 'sh' && f.body.includes('image-load'),
  );
  expect(fence, 'docs/operations.md has a shell block running make image-load').toBeDefined();
  const commands = commandsOf(fence!.body);
  expect(commands.some((c) => c.startsWith('make --no-print-directory image-load >image.env'))).toBe(true);
  const chained = commands.find((c) => c.includes('helm install'));
  expect(chained).toBeDefined();
  const install = chained!.slice(chained!.indexOf('helm install'));
  return wordsOf(install.replace(/\$(\w+)/g, (_m, name: string) => printed[name] ?? `$${name}`));
}

describe('installing without a registry', () => {
  it('imports the archive, names it by digest, and the documented install pins that name with no pull', async () => {
    const { dir, bin, socket, calls } = await machine();
    const archive = join(dir, 'llm-gateway_local.tar');
    writeFileSync(archive, 'an image archive');
    const run = imageLoad(bin, { IMAGE_ARCHIVE: archive, CONTAINERD_ADDRESS: socket });
    expect(run.status, run.stderr).toBe(0);
    const platform = process.arch === 'arm64' ? 'linux/arm64' : 'linux/amd64';
    expect(readFileSync(calls, 'utf8').trim().split('\n')).toEqual([
      `--address ${socket} -n k8s.io images rm docker.io/library/llm-gateway:local`,
      `--address ${socket} -n k8s.io images import --platform ${platform} ${archive}`,
      `--address ${socket} -n k8s.io images ls name==docker.io/library/llm-gateway:local`,
      `--address ${socket} -n k8s.io images tag --force docker.io/library/llm-gateway:local docker.io/library/llm-gateway@${DIGEST}`,
    ]);
    expect(run.stdout).toBe(`IMAGE_REPOSITORY=docker.io/library/llm-gateway\nIMAGE_DIGEST=${DIGEST}\n`);

    const printed = Object.fromEntries(
      run.stdout
        .trim()
        .split('\n')
        .map((line) => line.split('=') as [string, string]),
    );
    const words = documentedInstall(printed);
    const args = templateArgs({ skipTests: true });
    for (let i = 0; i < words.length; i++) if (words[i] === '--set') args.push('--set', words[++i]!);
    const values = join(dir, 'my-values.yaml');
    writeFileSync(values, 'config:\n  spec:\n    targets:\n      llama: { url: "http://vllm:8000/v1" }\n');
    args.push('--values', values);
    const rendered = await helmAsync(args);
    expect(rendered.status, rendered.stderr).toBe(0);
    const deployment = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS() as { kind?: string; spec?: { template: { spec: Record<string, unknown> } } })
      .find((o) => o?.kind === 'Deployment');
    const pod = deployment!.spec!.template.spec as {
      containers: { name: string; image: string; imagePullPolicy: string }[];
      initContainers?: { name: string; image: string; imagePullPolicy: string }[];
    };
    const containers = [...pod.containers, ...(pod.initContainers ?? [])];
    expect(containers.length).toBeGreaterThan(0);
    for (const container of containers) {
      expect(container.image, container.name).toBe(`docker.io/library/llm-gateway@${DIGEST}`);
      expect(container.imagePullPolicy, container.name).toBe('Never');
    }
  });

  it('keeps the repository of an image tagged with a registry host, and names everything missing at once', async () => {
    const { dir, bin, socket } = await machine();
    const archive = join(dir, 'image.tar');
    writeFileSync(archive, 'an image archive');
    const tagged = imageLoad(bin, {
      IMAGE: 'registry.example.com:5000/platform/llm-gateway:0.1.0',
      IMAGE_ARCHIVE: archive,
      CONTAINERD_ADDRESS: socket,
    });
    expect(tagged.stdout).toMatch(/^IMAGE_REPOSITORY=registry\.example\.com:5000\/platform\/llm-gateway$/m);

    const missing = imageLoad(toolFarm(join(dir, 'bare')), {
      IMAGE_ARCHIVE: join(dir, 'never-built.tar'),
      CONTAINERD_ADDRESS: join(dir, 'none.sock'),
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(
      `no image archive at ${join(dir, 'never-built.tar')}: run make image-local first`,
    );
    expect(missing.stderr).toContain('ctr is not on PATH (Debian package containerd)');
    expect(missing.stderr).toContain(`no containerd socket at ${join(dir, 'none.sock')}`);
    expect(missing.stdout).toBe('');
    expect(existsSync(join(dir, 'bare', 'ctr'))).toBe(false);
  });
});
