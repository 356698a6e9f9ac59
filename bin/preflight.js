// Imported first by both programs, before anything that needs a recent Node or a build: without
// these checks an old Node, a missing build or missing dependencies end in a stack trace from deep
// inside the module loader that says nothing about the remedy. Plain syntax only, so that any Node
// able to load an ES module can read this file and say what is wrong.
import { existsSync } from 'node:fs';

/** The oldest Node the dependencies accept (undici's `engines`). */
export var MINIMUM_NODE = [22, 19];

/** Exit code of these checks: the environment is wrong, as for a usage or configuration error. */
export var EXIT_SETUP = 2;

function fail(message) {
  process.stderr.write(message + '\n');
  process.exit(EXIT_SETUP);
}

export function requireNode(program) {
  var parts = process.versions.node.split('.');
  var major = Number(parts[0]);
  var minor = Number(parts[1]);
  if (major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1])) return;
  fail(
    program +
      ' needs Node.js ' +
      MINIMUM_NODE.join('.') +
      ' or newer (this is ' +
      process.version +
      ' at ' +
      process.execPath +
      "). Run it through the Makefile's Node: `make node-info` shows it, `.tools/node/bin/node bin/" +
      program +
      '.js ...`, or install Node 24.',
  );
}

/** Loads the compiled program at `entry` (a URL), or says what is missing from the checkout. */
export async function loadProgram(program, entry) {
  if (!existsSync(entry))
    fail(program + ' is not built: ' + entry.pathname + ' is missing. Run `make build` first.');
  try {
    await import(entry.href);
  } catch (error) {
    if (!error || error.code !== 'ERR_MODULE_NOT_FOUND' || !/Cannot find package/.test(error.message))
      throw error;
    fail(
      program +
        "'s dependencies are not installed (" +
        error.message.split(' imported from')[0] +
        '). Run `make build` (or `npm ci`) first.',
    );
  }
}
