/**
 * `make image-local` (e2e/images/gateway.sh) checks everything it needs from the machine before any
 * work, and names all that is missing in one message, or installs all of it in one apt-get as root.
 * The script runs for real from a scratch copy, with a PATH of chosen tools: fakes for `id` (root or
 * not), `docker` and `apt-get`, so what the machine lacks is the test's choice.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, removeLater, scratchDir, toolFarm, writeExecutable } from './support.ts';

const scratch: string[] = [];
afterEach(removeLater(scratch));

interface Machine {
  root: boolean;
  /** A docker client of this version that reaches no engine and has no buildx plugin. */
  docker?: string;
  busybox?: 'static' | 'dynamic';
  python3?: boolean;
  /**
   * A fake apt-get that records its arguments: `fails`, or `installs` (it puts the python3 this
   * machine lacks on PATH).
   */
  aptGet?: 'fails' | 'installs';
  /** The distribution packages buildx (a fake apt-cache that knows docker-buildx). */
  buildxPackage?: boolean;
  /** A docker client that reaches an engine and builds with BuildKit. */
  dockerWorks?: boolean;
}

function imageLocal(machine: Machine, env: Record<string, string> = {}) {
  const dir = scratchDir('image-local');
  scratch.push(dir);
  cpSync(join(ROOT, 'e2e/images'), join(dir, 'e2e/images'), { recursive: true });
  const bin = toolFarm(join(dir, 'bin'));
  for (const tool of ['date', 'cut', 'ldd']) {
    const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found) cpSync(found, join(bin, tool));
  }
  writeExecutable(join(bin, 'id'), `#!/bin/bash\n[[ $1 == -u ]] && echo ${machine.root ? 0 : 1000}\n`);
  if (machine.docker) {
    writeExecutable(
      join(bin, 'docker'),
      `#!/bin/bash\nif [[ $1 == version ]]; then echo ${machine.docker}; exit 0; fi\nexit 1\n`,
    );
  }
  if (machine.dockerWorks) writeExecutable(join(bin, 'docker'), '#!/bin/bash\nexit 0\n');
  if (machine.python3) writeExecutable(join(bin, 'python3'), '#!/bin/bash\n');
  const calls = join(dir, 'apt-get.calls');
  if (machine.aptGet === 'fails')
    writeExecutable(join(bin, 'apt-get'), `#!/bin/bash\necho "$*" >>${calls}\nexit 1\n`);
  if (machine.aptGet === 'installs')
    writeExecutable(
      join(bin, 'apt-get'),
      `#!/bin/bash\necho "$*" >>${calls}\nprintf '#!/bin/bash\\n' >${join(bin, 'python3')}\nchmod +x ${join(bin, 'python3')}\n`,
    );
  if (machine.buildxPackage)
    writeExecutable(join(bin, 'apt-cache'), '#!/bin/bash\n[[ $1 == show && $2 == docker-buildx ]]\n');
  let busybox = join(dir, 'no-busybox');
  if (machine.busybox === 'static') busybox = writeExecutable(join(dir, 'busybox'), '#!/bin/sh\n');
  if (machine.busybox === 'dynamic') busybox = '/bin/bash';
  const result = spawnSync(join(bin, 'bash'), [join(dir, 'e2e/images/gateway.sh')], {
    encoding: 'utf8',
    timeout: 30_000,
    env: {
      PATH: bin,
      HOME: dir,
      DOCKER_HOST: `unix://${join(dir, 'no-docker.sock')}`,
      IMAGE_BUSYBOX: busybox,
      ...env,
    },
  });
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    aptCalls: existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : [],
    aptLog: join(dir, 'e2e/.work/image-apt.log'),
  };
}

describe('make image-local: what it needs from the machine', () => {
  it('asks for buildx with the client where the distribution packages it separately', () => {
    const run = imageLocal({ root: true, buildxPackage: true }, { IMAGE_INSTALL: '0' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      '  - a docker client that builds with BuildKit (Debian packages docker.io docker-buildx)',
    );
    expect(run.stderr).toContain(
      'Install it with: apt-get install -y busybox-static docker-buildx docker.io python3',
    );
  });

  it('as root, installs what is missing and goes on to the build', () => {
    const run = imageLocal({ root: true, dockerWorks: true, busybox: 'static', aptGet: 'installs' });
    expect(run.aptCalls).toEqual(['install -y -q --no-install-recommends python3']);
    expect(run.stdout).toContain('installing what the build needs: python3');
    expect(run.stderr).not.toContain('lacks');
    // Past the check it reads the package version, which this scratch copy does not have.
    expect(run.stderr).toContain('package.json');
  });

  it('names everything missing at once, with the packages, and starts nothing', () => {
    const run = imageLocal({ root: true }, { IMAGE_INSTALL: '0' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('make image-local needs what this machine lacks:');
    const items = run.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(items).toEqual([
      expect.stringMatching(
        /^ {2}- a Docker engine: none answers at unix:\/\/.*no-docker\.sock.*\(Debian package docker\.io\)$/,
      ),
      '  - a docker client that builds with BuildKit (Debian package docker.io)',
      expect.stringMatching(
        /^ {2}- a statically linked busybox at .*no-busybox .*\(Debian package busybox-static\)$/,
      ),
      "  - python3 (it writes the base images' layers) (Debian package python3)",
    ]);
    expect(run.stderr).toContain('Install it with: apt-get install -y busybox-static docker.io python3');
    expect(run.stdout).toBe('');
  });

  it('names only what is missing: a client without buildx, a dynamically linked busybox', () => {
    const run = imageLocal(
      { root: false, docker: '28.2.2', busybox: 'dynamic', python3: true },
      { IMAGE_INSTALL: '0' },
    );
    expect(run.status).toBe(1);
    const items = run.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(items).toHaveLength(3);
    expect(items[0]).toMatch(/a Docker engine: .*needs root and dockerd/);
    expect(items[1]).toMatch(
      /a docker client that builds with BuildKit: .*\/docker is version 23 or later without the buildx plugin/,
    );
    expect(items[2]).toMatch(/a statically linked busybox at \/bin\/bash .*busybox-static/);
    // Not root: it cannot install, and says how.
    expect(run.stderr).toContain('Install it as root (apt-get install -y busybox-static docker.io)');
  });

  it('as root, installs all of it in one apt-get, and says where the log is when that fails', () => {
    const run = imageLocal({ root: true, python3: true, busybox: 'static', aptGet: 'fails' });
    expect(run.status).toBe(1);
    expect(run.stdout).toContain(
      'installing what the build needs: docker.io (apt-get; IMAGE_INSTALL=0 names it instead)',
    );
    expect(run.aptCalls).toEqual(['install -y -q --no-install-recommends docker.io', 'update -q']);
    expect(run.stderr).toContain(`apt-get install docker.io failed (log: e2e/.work/image-apt.log)`);
    expect(existsSync(run.aptLog)).toBe(true);
  });
});
