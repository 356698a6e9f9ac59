/**
 * Reading a file named by a secret reference (`from_file`). The resolver and the watcher read through
 * this one function, so the fingerprint the watcher compares is the fingerprint of what a load used.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';

/**
 * A key file holds one key. The cap keeps a reference to the wrong file (a log, an archive) from
 * being read into memory at every poll.
 */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

export type SecretFileRead =
  | { readonly ok: true; readonly bytes: Buffer; readonly fingerprint: string }
  | {
      readonly ok: false;
      /** The errno code (`ENOENT`, `EACCES`, ...), or `ENOTFILE` / `EFBIG` for the checks below. */
      readonly code: string;
      /** Why, in words, without the content. */
      readonly reason: string;
      readonly fingerprint: string;
    };

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a component of the path is not a directory',
};

function failed(code: string, reason: string): SecretFileRead {
  // Distinct per error, so a file that turns from missing to unreadable still counts as a change.
  return { ok: false, code, reason, fingerprint: `!${code}` };
}

/**
 * Reads the file at `path`, following symlinks (a Secret volume's `key -> ..data/key`). Only a
 * regular file of at most MAX_SECRET_FILE_BYTES is read: a device or a FIFO could block or never
 * end. The fingerprint is the sha256 of the bytes; it stays in memory to notice a rotation and is
 * never logged or published (a digest of a short key could be brute-forced).
 */
export async function readSecretFile(path: string): Promise<SecretFileRead> {
  try {
    const info = await stat(path);
    if (info.isDirectory()) return failed('EISDIR', REASONS.EISDIR!);
    if (!info.isFile()) return failed('ENOTFILE', 'not a regular file');
    if (info.size > MAX_SECRET_FILE_BYTES)
      return failed('EFBIG', `larger than ${MAX_SECRET_FILE_BYTES} bytes: a key file holds one key`);
    const bytes = await readFile(path);
    if (bytes.length > MAX_SECRET_FILE_BYTES)
      return failed('EFBIG', `larger than ${MAX_SECRET_FILE_BYTES} bytes: a key file holds one key`);
    return { ok: true, bytes, fingerprint: createHash('sha256').update(bytes).digest('hex') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    return failed(code, REASONS[code] ?? code);
  }
}
