import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createLogger } from './logger.js';
import { serve } from './serve.js';
import { packageVersion } from './version.js';

/** Exit codes: 0 clean, 1 startup failure (config, listen), 2 bad usage. */
const EXIT_STARTUP = 1;
const EXIT_USAGE = 2;

function integer(min: number, max: number) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value.trim())) throw new InvalidArgumentError(`expected an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max)
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

interface ServeFlags {
  host: string;
  port: number;
  model: string[];
  models?: string;
  enableDirectives?: boolean;
  maxWaiting?: number;
  reasoningField: 'reasoning_content' | 'reasoning';
}

function buildProgram(): Command {
  const program = new Command('sim')
    .description('Simulated OpenAI-compatible inference server (and Anthropic Messages API)')
    .version(packageVersion(), '--version', 'print the version')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('serve')
    .description(
      'serve chat and text completions and Anthropic Messages with modelled latency, fault injection and saturation control',
    )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', integer(0, 65535), 8000)
    .option('--model <file>', 'model TOML file (repeatable)', collect, [])
    .option('--models <dir>', 'directory of model TOML files')
    .option(
      '--enable-directives',
      'honor x-sim-fault headers and @sim echo directives (trusted clients only)',
    )
    .option(
      '--max-waiting <n>',
      "override every model's max_waiting (0: unbounded)",
      integer(0, 4_294_967_295),
    )
    .addOption(
      new Option('--reasoning-field <field>', 'delta field for reasoning text')
        .choices(['reasoning_content', 'reasoning'])
        .default('reasoning_content'),
    )
    .action(async (flags: ServeFlags) => {
      const log = createLogger();
      const result = await serve(
        {
          host: flags.host,
          port: flags.port,
          modelFiles: flags.model,
          modelsDir: flags.models,
          enableDirectives: flags.enableDirectives === true,
          maxWaiting: flags.maxWaiting,
          reasoningField: flags.reasoningField,
        },
        log,
      );
      if (!result.ok) {
        // The structured line for log collectors, and one line a person reads on the terminal.
        log.fatal({ error: result.message }, 'startup failed');
        process.stderr.write(`sim: ${result.message}\n`);
        process.exit(EXIT_STARTUP);
      }
      const shutdown = (signal: NodeJS.Signals): void => {
        log.info({ signal }, 'shutting down');
        void result.sim.close().then(() => process.exit(0));
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    });
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --version and --help end here with exit code 0; every usage error is 2.
      process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
    }
    throw err;
  }
}

await main();
