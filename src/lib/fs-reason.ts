const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a component of the path is not a directory',
};

/**
 * Why a file could not be read, in words. The system's own message (`ENOENT: no such file or
 * directory, open '/path'`) repeats the path the caller already names, and the system call.
 */
export function fsReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const reason = code === undefined ? undefined : REASONS[code];
  if (reason !== undefined) return reason;
  return error instanceof Error ? error.message : String(error);
}
