import { dirname } from 'node:path';
import type { Logger } from '../telemetry/logger.js';
import { DirectoryWatch, entriesBehind } from './directory-watch.js';
import { readSecretFile } from './secret-file.js';

/** One version of the configuration document, as its source read it. */
export interface ConfigDocument {
  /**
   * Identity of this version: equal versions are never loaded twice. The file's sha256 in file mode;
   * a GatewayConfig's uid, generation and content hash in resource mode.
   */
  readonly version: string;
}

/** Where the configuration document comes from: the file (file mode) or a GatewayConfig object. */
export interface ConfigSource<D extends ConfigDocument> {
  /**
   * A file whose directory is watched for changes of the document; undefined when the source
   * announces its own changes (it calls `ConfigWatcher.check`).
   */
  readonly path?: string;
  /** The document now, or undefined when there is none to load (unreadable, deleted). */
  read(): Promise<D | undefined>;
}

/** What the serving configuration was loaded from: the state every check compares against. */
export interface WatchedState {
  /** The version of the document last loaded (see `ConfigDocument.version`). */
  readonly version: string;
  /**
   * The key files the configuration references, path -> fingerprint of the content its load read
   * (see `readSecretFile`). Fingerprints stay in memory: never logged, never published.
   */
  readonly files: ReadonlyMap<string, string>;
}

export interface ConfigChange<D extends ConfigDocument> {
  readonly document: D;
  /** What differs from the last load: `config` (the document itself) and/or referenced file paths. */
  readonly changed: readonly string[];
  readonly trigger: CheckTrigger;
}

export type CheckTrigger = 'watch' | 'poll' | 'manual' | 'resource';

export interface ConfigWatcherOptions<D extends ConfigDocument> {
  source: ConfigSource<D>;
  /** What the startup load read, so the first poll does not reload it again. */
  initial: WatchedState;
  logger: Logger;
  /**
   * Loads the changed configuration (applying it or rejecting it). Resolves with the key files that
   * load referenced and the fingerprints of what it read, or undefined when the document was invalid
   * before its references were known (the files watched so far stay watched).
   */
  onChange: (change: ConfigChange<D>) => Promise<ReadonlyMap<string, string> | undefined>;
  debounceMs?: number;
  pollMs: number;
}

/**
 * Watches the configuration document's source and the key files it references (`from_file`). Files
 * (the configuration file in file mode, and every key file) are watched the same way:
 * through their directories, since a ConfigMap or Secret volume update swaps the `..data` symlink to
 * a new timestamped directory and editors write by rename, and a watch on a file would stay attached
 * to the old inode forever. An event for one of those entries means "maybe changed": after a
 * debounce the document and every key file are read again (by path, re-resolving every symlink) and a
 * load runs only if the document's version or a key file's fingerprint differs from what the serving
 * load read. A poll of the same comparison is the safety net for events that never arrive (some
 * overlay and network filesystems).
 */
export class ConfigWatcher<D extends ConfigDocument> {
  private readonly directories = new Map<string, DirectoryWatch>();
  /** Entries whose events arrived since the last check, reported only if the check finds a change. */
  private readonly eventEntries = new Set<string | null>();
  private debounceTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private last: WatchedState;
  private checking: Promise<void> | undefined;
  private recheck = false;
  private started = false;
  private stopped = false;
  private readonly debounceMs: number;
  private readonly options: ConfigWatcherOptions<D>;

  constructor(options: ConfigWatcherOptions<D>) {
    this.options = options;
    this.last = options.initial;
    this.debounceMs = options.debounceMs ?? 250;
  }

  start(): void {
    this.started = true;
    this.syncDirectories();
    this.pollTimer = setInterval(() => void this.check('poll'), this.options.pollMs);
    this.pollTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const directory of this.directories.values()) directory.close();
    this.directories.clear();
    clearTimeout(this.debounceTimer);
    clearInterval(this.pollTimer);
  }

  /** The files whose changes reload the configuration: the configuration file (if any) and its key files. */
  watchedFiles(): string[] {
    const path = this.options.source.path;
    return [...(path === undefined ? [] : [path]), ...this.last.files.keys()];
  }

  /** One watch per directory holding a watched file, each told which of its entries matter. */
  private syncDirectories(): void {
    if (!this.started || this.stopped) return;
    const names = new Map<string, Set<string>>();
    for (const file of this.watchedFiles()) {
      const dir = dirname(file);
      const set = names.get(dir) ?? new Set<string>();
      for (const entry of entriesBehind(file)) set.add(entry);
      names.set(dir, set);
    }
    for (const [dir, directory] of this.directories)
      if (!names.has(dir)) {
        directory.close();
        this.directories.delete(dir);
      }
    for (const [dir, entries] of names) {
      let directory = this.directories.get(dir);
      if (directory === undefined) {
        directory = new DirectoryWatch(dir, this.options.logger, (entry) => this.onEvent(entry));
        this.directories.set(dir, directory);
        directory.names = entries;
        directory.arm();
      } else directory.names = entries;
    }
  }

  private onEvent(entry: string | null): void {
    // Bounded: entries are the watched names (and `null` where the platform gives none).
    this.eventEntries.add(entry);
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => void this.check('watch'), this.debounceMs);
    this.debounceTimer.unref();
  }

  /** Reads the files now and loads if they changed. Concurrent calls coalesce into one re-check. */
  check(trigger: CheckTrigger): Promise<void> {
    if (this.checking) {
      this.recheck = true;
      return this.checking;
    }
    this.checking = this.readAndCompare(trigger).finally(() => {
      this.checking = undefined;
      if (this.recheck && !this.stopped) {
        this.recheck = false;
        void this.check(trigger);
      }
    });
    return this.checking;
  }

  private async readAndCompare(trigger: CheckTrigger): Promise<void> {
    const events = [...this.eventEntries];
    this.eventEntries.clear();
    const document = await this.options.source.read();
    if (this.stopped || document === undefined) return;
    const changed: string[] = document.version === this.last.version ? [] : ['config'];
    const files = new Map<string, string>();
    for (const [file, fingerprint] of this.last.files) {
      const read = await readSecretFile(file);
      files.set(file, read.fingerprint);
      if (read.fingerprint !== fingerprint) changed.push(file);
    }
    if (this.stopped || changed.length === 0) return;
    // Logged only for a real change: a check that finds nothing writes nothing, so a log written into
    // a watched directory cannot keep the watcher busy.
    this.options.logger.debug({ trigger, changed, events }, 'configuration sources changed');
    let loaded: ReadonlyMap<string, string> | undefined;
    try {
      loaded = await this.options.onChange({ document, changed, trigger });
    } catch (error) {
      this.options.logger.error({ err: error }, 'configuration load failed unexpectedly');
    }
    // What the load read, when it got that far: a file that changed again since is seen next time.
    this.last = { version: document.version, files: loaded ?? files };
    this.syncDirectories();
  }
}
