/**
 * scripts/import-cycles.ts, the import-cycle check of `make lint`, on scratch source trees and on
 * the real src/.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, removeLater, scratchDir } from './support.ts';

const scratch: string[] = [];
afterAll(removeLater(scratch));

/** A scratch repository holding `files` (paths under it), and the check run there on src/. */
function check(files: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const dir = scratchDir('import-cycles');
  scratch.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return run(dir, 'src');
}

function run(cwd: string, root: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(ROOT, 'scripts/import-cycles.ts'), root], {
    cwd,
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A tree with a module circle, and the line that must name it. */
interface ModuleCircle {
  what: string;
  files: Record<string, string>;
  names: string;
}

const MODULE_CIRCLES: ModuleCircle[] = [
  {
    what: 'two modules importing each other',
    files: {
      'src/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'src/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    },
    names: 'src/a.ts -> src/b.ts -> src/a.ts',
  },
  {
    what: 'a longer circle through folders, made of `import type` and re-exports',
    files: {
      'src/lib/a.ts': "import type { C } from '../other/c.js';\nexport type A = C;\n",
      'src/lib/b.ts': "export { a } from './a.js';\n",
      'src/other/c.ts': "export type { B } from '../lib/b.js';\nexport type C = string;\n",
      'src/lib/unrelated.ts': "import type { A } from './a.js';\nexport type U = A;\n",
    },
    names: 'src/lib/a.ts -> src/other/c.ts -> src/lib/b.ts -> src/lib/a.ts',
  },
  {
    what: 'a circle through a folder import resolved to its index.ts',
    files: {
      'src/a.ts': "import { b } from './b/index.js';\nexport const a = 1;\n",
      'src/b/index.ts': "import { a } from '../a.js';\nexport const b = a;\n",
    },
    names: 'src/a.ts -> src/b/index.ts -> src/a.ts',
  },
];

describe('import cycles between modules', () => {
  it.each(MODULE_CIRCLES)('fails on $what and names the circle alone', ({ files, names }) => {
    const result = check(files);
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toBe(`import cycle between modules: ${names}`);
  });

  it('passes a tree whose imports point one way, package imports ignored', () => {
    const result = check({
      'src/a.ts': "import { z } from 'zod';\nimport { b } from './b.js';\nexport const a = [z, b];\n",
      'src/b.ts': "import { readFileSync } from 'node:fs';\nexport const b = readFileSync;\n",
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('import cycles: none');
  });
});

describe('import cycles between the folders under src/gateway', () => {
  it('fails on two folders importing each other through different modules, naming the imports', () => {
    const result = check({
      'src/gateway/config/compile.ts':
        "import { share } from '../balance/share.js';\nexport const c = share;\n",
      'src/gateway/config/schema.ts': 'export const DEFAULTS = {};\n',
      'src/gateway/balance/share.ts':
        "import { DEFAULTS } from '../config/schema.js';\nexport const share = DEFAULTS;\n",
    });
    expect(result.status).toBe(1);
    expect(result.stderr).not.toContain('between modules');
    expect(result.stderr).toContain(
      'import cycle between folders: src/gateway/balance/ -> src/gateway/config/ -> src/gateway/balance/',
    );
    expect(result.stderr).toContain('src/gateway/balance/share.ts imports src/gateway/config/schema.ts');
    expect(result.stderr).toContain('src/gateway/config/compile.ts imports src/gateway/balance/share.ts');
  });

  it('fails on a circle through a third folder and lists every folder in it', () => {
    const result = check({
      'src/gateway/a/one.ts': "import '../b/two.js';\n",
      'src/gateway/b/two.ts': "import '../c/three.js';\n",
      'src/gateway/c/three.ts': "import '../a/four.js';\n",
      'src/gateway/a/four.ts': 'export {};\n',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'import cycle between folders: src/gateway/a/ -> src/gateway/b/ -> src/gateway/c/ -> src/gateway/a/',
    );
  });

  it('leaves files directly in src/gateway and folders elsewhere out of the folder check', () => {
    const result = check({
      'src/gateway/gateway.ts': "import '../gateway/http/server.js';\n",
      'src/gateway/http/server.ts': "import '../options.js';\n",
      'src/gateway/options.ts': 'export {};\n',
      'src/lib/a.ts': "import '../simulator/b.js';\n",
      'src/simulator/b.ts': "import '../lib/c.js';\n",
      'src/lib/c.ts': 'export {};\n',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});

describe('the real source tree', () => {
  it('has no import cycle', () => {
    const result = run(ROOT, 'src');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
