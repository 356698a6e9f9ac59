// Imported first by both programs, before anything that needs a recent Node: on an older one their
// dependencies fail to load with an error that says nothing about the version. Plain syntax only,
// so that any Node able to load an ES module can read this file and say what is wrong.

/** The oldest Node the dependencies accept (undici's `engines`); package.json says the same. */
export var MINIMUM_NODE = [22, 19];

/** Exit code of a Node too old: the environment is wrong, as for a usage or configuration error. */
export var EXIT_OLD_NODE = 2;

export function requireNode(program) {
  var parts = process.versions.node.split('.');
  var major = Number(parts[0]);
  var minor = Number(parts[1]);
  if (major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1])) return;
  process.stderr.write(
    program +
      ' needs Node.js ' +
      MINIMUM_NODE.join('.') +
      ' or newer (this is ' +
      process.version +
      ' at ' +
      process.execPath +
      "). Run it through the Makefile's Node: `make node-info` shows it, `.tools/node/bin/node bin/" +
      program +
      '.js ...`, or install Node 24.\n',
  );
  process.exit(EXIT_OLD_NODE);
}
