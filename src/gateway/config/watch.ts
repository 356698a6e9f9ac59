import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../telemetry/logger.js';
import { sha256Hex } from './load.js';

export interface ConfigWatcherOptions {
  /** The configuration file; it may be a symlink chain (a Kubernetes ConfigMap volume). */
  path: string;
  /** Hash of the content already loaded at startup, so the first poll does not reload it again. */
  initialHash: string;
  logger: Logger;
  /** Called with new content whenever its hash differs from the last content seen. */
  onContent: (text: string, hash: string) => void;
  /** Called when the file cannot be read after retries (deleted, unreadable). */
  onReadError: (error: NodeJS.ErrnoException) => void;
  debounceMs?: number;
  pollMs: number;
}

const READ_RETRIES = 5;
const READ_RETRY_MS = 100;
const REARM_MS = 1_000;

/**
 * Watches the file's directory, not the file: a ConfigMap update swaps the `..data` symlink to a new
 * timestamped directory and editors write by rename, and a watch on the file would stay attached to
 * the old inode forever. Any event in the directory means "maybe changed": after a debounce the file
 * is re-read by path (re-resolving every symlink) and applied only if its sha256 changed. A poll on
 * the same path is the safety net for events that never arrive (some overlay and network
 * filesystems). A read racing the swap can see ENOENT, so reads are retried briefly.
 */
export class ConfigWatcher {
  private watcher: FSWatcher | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private rearmTimer: NodeJS.Timeout | undefined;
  private lastHash: string;
  private lastReadFailed = false;
  private checking: Promise<void> | undefined;
  private recheck = false;
  private stopped = false;
  private readonly debounceMs: number;
  private readonly options: ConfigWatcherOptions;

  constructor(options: ConfigWatcherOptions) {
    this.options = options;
    this.lastHash = options.initialHash;
    this.debounceMs = options.debounceMs ?? 250;
  }

  start(): void {
    this.arm();
    this.pollTimer = setInterval(() => void this.check('poll'), this.options.pollMs);
    this.pollTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    clearTimeout(this.debounceTimer);
    clearTimeout(this.rearmTimer);
    clearInterval(this.pollTimer);
  }

  private arm(): void {
    if (this.stopped) return;
    const dir = dirname(this.options.path);
    try {
      this.watcher = watch(dir, { persistent: false }, (_event, filename) => this.onEvent(filename));
      this.watcher.on('error', (error) => {
        this.options.logger.warn({ err: error, dir }, 'config watcher failed; re-arming');
        this.watcher?.close();
        this.scheduleRearm();
      });
    } catch (error) {
      this.options.logger.warn(
        { err: error, dir },
        'cannot watch the config directory; polling only until it can',
      );
      this.scheduleRearm();
    }
  }

  private scheduleRearm(): void {
    clearTimeout(this.rearmTimer);
    this.rearmTimer = setTimeout(() => this.arm(), REARM_MS);
    this.rearmTimer.unref();
  }

  private onEvent(filename: string | Buffer | null): void {
    this.options.logger.debug(
      { file: filename?.toString() ?? null, watching: basename(this.options.path) },
      'config directory event',
    );
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => void this.check('watch'), this.debounceMs);
    this.debounceTimer.unref();
  }

  /** Reads the file now and applies it if it changed. Concurrent calls coalesce into one re-check. */
  check(trigger: 'watch' | 'poll' | 'manual'): Promise<void> {
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

  private async readAndCompare(trigger: string): Promise<void> {
    let bytes: Buffer | undefined;
    let lastError: NodeJS.ErrnoException | undefined;
    for (let attempt = 0; attempt < READ_RETRIES && bytes === undefined; attempt++) {
      try {
        bytes = await readFile(this.options.path);
      } catch (error) {
        lastError = error as NodeJS.ErrnoException;
        if (lastError.code !== 'ENOENT') break;
        await sleep(READ_RETRY_MS);
      }
    }
    if (this.stopped) return;
    if (bytes === undefined) {
      // Report a missing file once, not on every poll.
      if (!this.lastReadFailed && lastError) this.options.onReadError(lastError);
      this.lastReadFailed = true;
      return;
    }
    this.lastReadFailed = false;
    const hash = sha256Hex(bytes);
    if (hash === this.lastHash) return;
    this.lastHash = hash;
    this.options.logger.debug({ trigger, hash }, 'config content changed');
    this.options.onContent(bytes.toString('utf8'), hash);
  }
}
