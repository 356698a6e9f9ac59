/**
 * Where the configuration comes from: the file (file mode, the default) or a GatewayConfig object
 * read through the Kubernetes API (resource mode). The gateway loads, compiles and swaps tables the
 * same way for both; an origin only supplies the documents and hears what became of them.
 */
import type { ConfigIssue } from './issues.js';
import type { ConfigResult } from './load.js';
import type { ResolvedGatewayConfig, SecretReferences } from './secrets.js';
import type { ConfigDocument, ConfigSource } from './watch.js';

/** A configuration loaded before the process serves, with its references resolved. */
export interface StartupConfig {
  readonly config: ResolvedGatewayConfig;
  readonly hash: string;
  readonly version: string;
  readonly references: SecretReferences;
}

export interface ConfigOrigin<D extends ConfigDocument = ConfigDocument> {
  /** The origin in words, for errors: the file's path, or `gatewayconfig NAMESPACE/NAME`. */
  readonly where: string;
  /** Fields of every configuration log line (`file`, or `resource`). */
  readonly logFields: Readonly<Record<string, string>>;
  readonly source: ConfigSource<D>;
  /**
   * The configuration the process starts with (file mode: startup fails without one); undefined
   * when it arrives later (resource mode: the process serves, not ready, until it does).
   */
  readonly startup: StartupConfig | undefined;
  /** Validates a document (no key is resolved yet). */
  parse(document: D): ConfigResult;
  /** Fields naming a document's version in log lines. */
  describe(document: D): Record<string, unknown>;
  /** The document now serves. */
  applied(document: D): void;
  /** The issues of a refused document in words, each naming its field as this origin's users know it. */
  describeIssues(issues: readonly ConfigIssue[]): string[];
  /** The document was refused (`errors` as `describeIssues` put them); the last good configuration keeps serving. */
  rejected(document: D, errors: readonly string[]): void;
  /** Starts what the origin runs beside the watcher (resource mode: the watch and the status). */
  start(): void;
  /**
   * Stops it, once however often it is called; resolves once what must be said before exit (the
   * status entry's withdrawal) is said, or could not be within a few seconds.
   */
  stop(): Promise<void>;
}
