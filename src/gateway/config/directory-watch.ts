import { readlinkSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import type { Logger } from '../telemetry/logger.js';

const REARM_MS = 1_000;

/**
 * The entry names in `dir` whose change can change the content read at `path`: its own name and,
 * when it is a symlink into the same directory, the first entry its target goes through. For a
 * Kubernetes volume (`team-a -> ..data/team-a`) that is `..data`, the symlink the kubelet swaps; for
 * an editor's write-and-rename it is the name itself.
 */
export function entriesBehind(path: string): string[] {
  const names = [basename(path)];
  let target: string;
  try {
    target = readlinkSync(path);
  } catch {
    return names; // not a symlink, or not there (yet)
  }
  // Absolute, so that a relative name (`-f config.yaml`) compares with the absolute target.
  const dir = resolve(dirname(path));
  const absolute = isAbsolute(target) ? target : resolve(dir, target);
  const relative = absolute.startsWith(`${dir}/`) ? absolute.slice(dir.length + 1) : undefined;
  const first = relative?.split('/')[0];
  if (first !== undefined && first !== '' && !names.includes(first)) names.push(first);
  return names;
}

/**
 * One `fs.watch` on a directory (not on a file: a watch on a file stays on the inode that a rename or
 * a `..data` swap replaces). Events for other entries of the directory are ignored, so a busy
 * directory (a log file next to the configuration) costs no reads. A failed watch is re-armed every
 * second; the poll covers the gap.
 */
export class DirectoryWatch {
  readonly dir: string;
  /** Entry names that matter (see `entriesBehind`); the owner keeps it current. */
  names: ReadonlySet<string> = new Set();
  private watcher: FSWatcher | undefined;
  private rearmTimer: NodeJS.Timeout | undefined;
  private failing = false;
  private closed = false;
  private readonly logger: Logger;
  private readonly onEvent: (entry: string | null) => void;

  constructor(dir: string, logger: Logger, onEvent: (entry: string | null) => void) {
    this.dir = dir;
    this.logger = logger;
    this.onEvent = onEvent;
  }

  arm(): void {
    if (this.closed) return;
    try {
      this.watcher = watch(this.dir, { persistent: false }, (_event, filename) => this.event(filename));
      this.watcher.on('error', (error) => {
        this.logger.warn({ err: error, dir: this.dir }, 'config watcher failed; re-arming');
        this.watcher?.close();
        this.scheduleRearm();
      });
      if (this.failing) this.logger.info({ dir: this.dir }, 'watching the directory again');
      this.failing = false;
    } catch (error) {
      // Said once per outage, not every second while the directory is missing.
      if (!this.failing)
        this.logger.warn(
          { err: error, dir: this.dir },
          'cannot watch the directory; polling only until it can',
        );
      this.failing = true;
      this.scheduleRearm();
    }
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    clearTimeout(this.rearmTimer);
  }

  private event(filename: string | Buffer | null): void {
    // Some platforms give no name: then any event may be the one.
    const entry = filename === null ? null : filename.toString();
    if (entry !== null && !this.names.has(entry)) return;
    // Nothing is logged here: the log may be a file in this very directory, and a line per event
    // would be an event of its own, without end. The owner reports the events that changed something.
    this.onEvent(entry);
  }

  private scheduleRearm(): void {
    clearTimeout(this.rearmTimer);
    this.rearmTimer = setTimeout(() => this.arm(), REARM_MS);
    this.rearmTimer.unref();
  }
}
