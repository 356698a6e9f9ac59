/** The configuration file as the gateway's configuration origin (file mode, the default). */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import { formatIssue, type ConfigIssue } from './issues.js';
import { loadConfigFile, parseConfigText, sha256Hex } from './load.js';
import type { ConfigOrigin } from './origin.js';
import { resolveLoaded } from './secrets.js';
import type { ConfigSource } from './watch.js';

/** The configuration file's content as one read saw it. */
export interface FileDocument {
  /** The file's sha256: what the watcher compares, and the `config_info` hash. */
  readonly version: string;
  readonly text: string;
}

const READ_RETRIES = 5;
const READ_RETRY_MS = 100;

/**
 * Reads the configuration file by path on every check (re-resolving a ConfigMap volume's symlink
 * chain). A read racing a volume's symlink swap can see ENOENT, so it is retried briefly; a file that
 * stays unreadable is reported once, not on every poll, until a read succeeds again.
 */
export class FileConfigSource implements ConfigSource<FileDocument> {
  readonly path: string;
  private readonly onReadError: (error: NodeJS.ErrnoException) => void;
  private readonly onReadable: () => void;
  private lastReadFailed = false;

  constructor(
    path: string,
    handlers: { onReadError: (error: NodeJS.ErrnoException) => void; onReadable?: () => void },
  ) {
    this.path = path;
    this.onReadError = handlers.onReadError;
    this.onReadable = handlers.onReadable ?? (() => undefined);
  }

  async read(): Promise<FileDocument | undefined> {
    let lastError: NodeJS.ErrnoException | undefined;
    for (let attempt = 0; attempt < READ_RETRIES; attempt++) {
      try {
        const bytes = await readFile(this.path);
        if (this.lastReadFailed) this.onReadable();
        this.lastReadFailed = false;
        return { version: sha256Hex(bytes), text: bytes.toString('utf8') };
      } catch (error) {
        lastError = error as NodeJS.ErrnoException;
        if (lastError.code !== 'ENOENT') break;
        await sleep(READ_RETRY_MS);
      }
    }
    if (!this.lastReadFailed && lastError) this.onReadError(lastError);
    this.lastReadFailed = true;
    return undefined;
  }
}

/** Thrown when the configuration the process starts with is invalid or unreadable. */
export class ConfigLoadError extends Error {
  readonly file: string;
  readonly issues: ConfigIssue[];

  constructor(file: string, issues: ConfigIssue[]) {
    super(
      issues.length === 1 && issues[0]!.unreadable === true
        ? `${file}: cannot read the configuration file`
        : `${file}: invalid configuration (${issues.length} error${issues.length === 1 ? '' : 's'})`,
    );
    this.file = file;
    this.issues = issues;
  }
}

/**
 * Loads the file the process starts with (throws ConfigLoadError when it is invalid) and watches it:
 * an unreadable file turns `config_source_up` to 0 until it can be read again.
 */
export async function openFileOrigin(
  path: string,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<ConfigOrigin<FileDocument>> {
  const startup = await resolveLoaded(await loadConfigFile(path));
  if (!startup.ok) throw new ConfigLoadError(path, startup.issues);
  const source = new FileConfigSource(path, {
    onReadError: (error) => {
      metrics.configReloads.inc({ result: 'failure' });
      metrics.configLastReloadSuccessful.set(0);
      metrics.configSourceUp.set(0);
      logger.error(
        { file: path, code: error.code, err: error.message },
        'configuration file unreadable; still serving the last good configuration',
      );
    },
    onReadable: () => {
      metrics.configSourceUp.set(1);
      logger.info({ file: path }, 'configuration file readable again');
    },
  });
  return {
    where: path,
    logFields: { file: path },
    source,
    startup: { ...startup, version: startup.hash },
    parse: (document) => parseConfigText(document.text, path),
    describe: (document) => ({ hash: document.version }),
    describeIssues: (issues) => issues.map(formatIssue),
    applied: () => undefined,
    rejected: () => undefined,
    start: () => undefined,
    stop: () => Promise.resolve(),
  };
}
