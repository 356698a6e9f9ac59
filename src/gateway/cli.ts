import { Command, CommanderError } from 'commander';
import { formatIssue } from './config/issues.js';
import { closestMatch } from './config/suggest.js';
import { ConfigLoadError, createGateway } from './gateway.js';
import { ListenError } from './http/listen.js';
import { StartupError } from './lifecycle/startup-error.js';
import { gatewayOptionDefinitions, sharedStateUrlProblem, type GatewayOptions } from './options.js';
import { accessLogTargetProblem } from './telemetry/access-log.js';
import { createLogger } from './telemetry/logger.js';
import { startTracing } from './telemetry/tracing.js';
import { packageVersion } from '../lib/version.js';

/** Exit codes: 0 clean, 1 runtime failure (forced drain, listener error), 2 usage or configuration error. */
const EXIT_USAGE = 2;
const EXIT_RUNTIME = 1;

function buildProgram(): Command {
  const program = new Command('gateway')
    .description('OpenAI-compatible routing gateway for chat-completion providers.')
    .version(packageVersion(), '-v, --version', 'print the version and exit')
    .showHelpAfterError('(run `gateway --help` for every option)')
    .exitOverride();
  for (const option of gatewayOptionDefinitions()) program.addOption(option);
  program.addHelpText(
    'after',
    `
Environment variables are read when the flag is not given (flag > environment > default).
Boolean flags take an optional value: --watch, --watch true, --watch false.
\`gateway <command> --help\` describes a command's options.

Exit codes: 0 clean shutdown, 1 runtime failure (drain deadline exceeded, listener error),
2 usage or configuration error.`,
  );

  program
    .command('validate <file>')
    .description(
      'check a configuration file: exit 0 when valid, 1 with every error and its JSON path (--skip-references: without reading the key files and variables it references)',
    )
    .option(
      '--skip-references',
      'check key references (from_file, from_env) for their shape only, reading no key file or variable',
    )
    .action(async (file: string, opts: { skipReferences?: boolean }) => {
      // Commands load on demand: the server's startup never pays for the docs generator.
      const { runValidate } = await import('./commands/validate.js');
      process.exitCode = await runValidate(file, process.stdout, process.stderr, {
        skipReferences: opts.skipReferences ?? false,
      });
    });

  program
    .command('schema')
    .description('print the JSON Schema of the configuration file (--markdown: the Markdown field reference)')
    .option('--markdown', 'print the generated Markdown field reference instead')
    .action(async (opts: { markdown?: boolean }) => {
      const { runSchema } = await import('./commands/schema.js');
      process.exitCode = runSchema(opts.markdown ? 'markdown' : 'json', process.stdout);
    });

  program
    .command('crd')
    .description(
      'print the GatewayConfig CustomResourceDefinition as YAML (resource mode: `gateway crd | kubectl apply -f -`)',
    )
    .action(async () => {
      const { runCrd } = await import('./commands/crd.js');
      process.exitCode = runCrd(process.stdout);
    });

  program.allowExcessArguments(true).action(async (opts: Partial<GatewayOptions>, command: Command) => {
    // A word that names no command reaches the server's action as an argument; commander would call
    // it one argument too many.
    const [word] = command.args;
    if (word !== undefined) {
      const names = program.commands.map((c) => c.name());
      const suggestion = closestMatch(word, names);
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.unknownCommand',
        `error: unknown command '${word}'${suggestion === undefined ? '' : ` (did you mean ${suggestion}?)`}; commands: ${names.join(', ')}`,
      );
    }
    if (opts.targets && opts.configResource) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.configSources',
        `error: --targets (-f, GATEWAY_TARGETS) and --config-resource (GATEWAY_CONFIG_RESOURCE) are mutually exclusive: the configuration comes from a file or from a GatewayConfig object, not both (got ${opts.targets} and ${opts.configResource.namespace}/${opts.configResource.name})`,
      );
    }
    if (!opts.targets && !opts.configResource) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.missingTargets',
        'error: --targets <file> (or -f) is required, or --config-resource <namespace/name> to read the configuration from a GatewayConfig object',
      );
    }
    if (opts.configResource && opts.watch === false) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.watchResource',
        'error: --watch false cannot be combined with --config-resource: a GatewayConfig object is always watched, and its status says which generation each replica serves',
      );
    }
    if (opts.port !== 0 && opts.port === opts.metricsPort) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.portClash',
        `error: --port and --metrics-port must differ (both ${opts.port}): health and metrics never share the proxy port`,
      );
    }
    if (opts.headerTimeoutSecs! > opts.requestTimeoutSecs!) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.timeouts',
        `error: --header-timeout-secs (${opts.headerTimeoutSecs}) must not exceed --request-timeout-secs (${opts.requestTimeoutSecs})`,
      );
    }
    const urlProblem = opts.sharedState === undefined ? undefined : sharedStateUrlProblem(opts.sharedState);
    if (urlProblem !== undefined) {
      throw new CommanderError(EXIT_USAGE, 'gateway.sharedState', `error: ${urlProblem}`);
    }
    if (opts.sharedStateLeaseSecs! * 1000 < 3 * opts.sharedStateTimeoutMs!) {
      throw new CommanderError(
        EXIT_USAGE,
        'gateway.sharedStateLease',
        `error: --shared-state-lease-secs (${opts.sharedStateLeaseSecs}) must be at least three times --shared-state-timeout-ms (${opts.sharedStateTimeoutMs} ms): a lease is renewed when a third of it has passed, and the renewal must land before it runs out`,
      );
    }
    const accessLogProblem = accessLogTargetProblem(opts.accessLog!);
    if (accessLogProblem !== undefined) {
      throw new CommanderError(EXIT_USAGE, 'gateway.accessLog', `error: ${accessLogProblem}`);
    }
    await serve(opts as GatewayOptions);
  });
  return program;
}

async function serve(options: GatewayOptions): Promise<void> {
  const logger = createLogger();
  // OpenTelemetry from the standard OTEL_* environment; nothing loads or costs when it is off.
  const tracing = await startTracing();
  if (tracing.warning) logger.warn({ reason: tracing.reason }, tracing.warning);
  logger.info({ enabled: tracing.enabled, reason: tracing.reason, service: tracing.serviceName }, 'tracing');
  let gateway;
  try {
    gateway = await createGateway(options, { logger });
  } catch (error) {
    if (error instanceof ConfigLoadError) {
      const errors = error.issues.map(formatIssue);
      logger.fatal({ file: error.file, errors }, error.message);
      for (const line of errors) process.stderr.write(`${error.file}: ${line}\n`);
      process.exit(EXIT_USAGE);
    }
    if (error instanceof StartupError) {
      logger.fatal({ reason: error.message }, 'cannot start');
      process.stderr.write(`gateway: ${error.message}\n`);
      process.exit(EXIT_USAGE);
    }
    throw error;
  }

  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      logger.warn({ signal }, 'shutdown already in progress');
      return;
    }
    shuttingDown = true;
    void gateway.shutdown(signal).then((code) => process.exit(code));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  try {
    await gateway.listen();
  } catch (error) {
    if (error instanceof ListenError) {
      const { listener, host, port, code } = error;
      logger.fatal({ listener, host, port, code, reason: error.message }, 'cannot start listeners');
      process.stderr.write(`gateway: ${error.message}\n`);
    } else logger.fatal({ err: error }, 'cannot start listeners');
    process.exit(EXIT_RUNTIME);
  }
  logger.info({ version: packageVersion(), pid: process.pid }, 'gateway started');
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version are not errors.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') process.exit(0);
      if (error.code.startsWith('gateway.')) process.stderr.write(`${error.message}\n`);
      process.exit(EXIT_USAGE);
    }
    process.stderr.write(
      `gateway: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(EXIT_RUNTIME);
  }
}

await main(process.argv);
