import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../telemetry/logger.js';
import { DirectoryWatch, entriesBehind } from './directory-watch.js';
import { sha256Hex } from './load.js';
import { readSecretFile } from './secret-file.js';

/** What the serving configuration was loaded from: the state every check compares against. */
export interface WatchedState {
  /** sha256 of the configuration file bytes. */
  readonly configHash: string;
  /**
   * The key files the configuration references, path -> fingerprint of the content its load read
   * (see `readSecretFile`). Fingerprints stay in memory: never logged, never published.
   */
  readonly files: ReadonlyMap<string, string>;
}

export interface ConfigChange {
  /** The configuration file's content and its sha256. */
  readonly text: string;
  readonly hash: string;
  /** What differs from the last load: `config` (the file itself) and/or referenced file paths. */
  readonly changed: readonly string[];
  readonly trigger: CheckTrigger;
}

export type CheckTrigger = 'watch' | 'poll' | 'manual';

export interface ConfigWatcherOptions {
  /** The configuration file; it may be a symlink chain (a Kubernetes ConfigMap volume). */
  path: string;
  /** What the startup load read, so the first poll does not reload it again. */
  initial: WatchedState;
  logger: Logger;
  /**
   * Loads the changed configuration (applying it or rejecting it). Resolves with the key files that
   * load referenced and the fingerprints of what it read, or undefined when the file was invalid
   * before its references were known (the files watched so far stay watched).
   */
  onChange: (change: ConfigChange) => Promise<ReadonlyMap<string, string> | undefined>;
  /** Called when the configuration file cannot be read after retries (deleted, unreadable). */
  onReadError: (error: NodeJS.ErrnoException) => void;
  debounceMs?: number;
  pollMs: number;
}

const READ_RETRIES = 5;
const READ_RETRY_MS = 100;

/**
 * Watches the configuration file and the key files it references (`from_file`) the same way:
 * through their directories, since a ConfigMap or Secret volume update swaps the `..data` symlink to
 * a new timestamped directory and editors write by rename, and a watch on a file would stay attached
 * to the old inode forever. An event for one of those entries means "maybe changed": after a
 * debounce every file is re-read by path (re-resolving every symlink) and a load runs only if the
 * configuration's sha256 or a key file's fingerprint differs from what the serving load read. A
 * poll of the same comparison is the safety net for events that never arrive (some overlay and
 * network filesystems). A read racing the swap can see ENOENT, so config reads are retried briefly.
 */
export class ConfigWatcher {
  private readonly directories = new Map<string, DirectoryWatch>();
  /** Entries whose events arrived since the last check, reported only if the check finds a change. */
  private readonly eventEntries = new Set<string | null>();
  private debounceTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private last: WatchedState;
  private lastReadFailed = false;
  private checking: Promise<void> | undefined;
  private recheck = false;
  private started = false;
  private stopped = false;
  private readonly debounceMs: number;
  private readonly options: ConfigWatcherOptions;

  constructor(options: ConfigWatcherOptions) {
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

  /** The files whose changes reload the configuration: the file itself and its key files. */
  watchedFiles(): string[] {
    return [this.options.path, ...this.last.files.keys()];
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

  private async readConfig(): Promise<Buffer | undefined> {
    let lastError: NodeJS.ErrnoException | undefined;
    for (let attempt = 0; attempt < READ_RETRIES; attempt++) {
      try {
        const bytes = await readFile(this.options.path);
        this.lastReadFailed = false;
        return bytes;
      } catch (error) {
        lastError = error as NodeJS.ErrnoException;
        if (lastError.code !== 'ENOENT') break;
        await sleep(READ_RETRY_MS);
      }
    }
    // Report a missing file once, not on every poll.
    if (!this.stopped && !this.lastReadFailed && lastError) this.options.onReadError(lastError);
    this.lastReadFailed = true;
    return undefined;
  }

  private async readAndCompare(trigger: CheckTrigger): Promise<void> {
    const events = [...this.eventEntries];
    this.eventEntries.clear();
    const bytes = await this.readConfig();
    if (this.stopped || bytes === undefined) return;
    const hash = sha256Hex(bytes);
    const changed: string[] = hash === this.last.configHash ? [] : ['config'];
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
      loaded = await this.options.onChange({ text: bytes.toString('utf8'), hash, changed, trigger });
    } catch (error) {
      this.options.logger.error({ err: error }, 'configuration load failed unexpectedly');
    }
    // What the load read, when it got that far: a file that changed again since is seen next time.
    this.last = { configHash: hash, files: loaded ?? files };
    this.syncDirectories();
  }
}
