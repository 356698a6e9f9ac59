/**
 * A problem in the environment that stops the process before it serves, such as resource mode
 * without Kubernetes credentials: the CLI prints the message and exits 2 (a usage error).
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
