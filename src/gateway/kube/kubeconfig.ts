/**
 * The Kubernetes credentials of resource mode and endpoint discovery. In a pod, the service account
 * (its token file is re-read as the kubelet rotates it); outside a cluster, `KUBECONFIG` or
 * `~/.kube/config`, as kubectl reads them. `KUBECONFIG` wins when set, so a pod can be pointed
 * elsewhere on purpose. Loaded once per process: both users share it.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { StartupError } from '../lifecycle/startup-error.js';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadedKubeConfig {
  readonly kubeConfig: KubeConfig;
  /** Where the credentials came from, for the start-up log line. */
  readonly from: string;
  /** The API server's URL. */
  readonly server: string;
}

/**
 * Why credentials could not be loaded, without the library's message: a YAML error quotes the lines
 * around it, and in a kubeconfig those may hold a token.
 */
function loadFailure(error: unknown): string {
  const mark = (error as { mark?: { line?: number; column?: number } }).mark;
  if (typeof mark?.line === 'number')
    return `not valid YAML (line ${mark.line + 1}, column ${(mark.column ?? 0) + 1})`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'an unreadable configuration';
}

let loaded: LoadedKubeConfig | undefined;

/** The credentials; `purpose` starts the message of a StartupError when there are none. */
export function loadKubeConfig(purpose: string): LoadedKubeConfig {
  loaded ??= readKubeConfig(purpose);
  return loaded;
}

function readKubeConfig(purpose: string): LoadedKubeConfig {
  const env = process.env;
  const kubeConfig = new KubeConfig();
  let from = 'the Kubernetes credentials';
  try {
    if (env.KUBECONFIG) {
      from = `KUBECONFIG (${env.KUBECONFIG})`;
      kubeConfig.loadFromDefault();
    } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
      if (!existsSync(join(SERVICE_ACCOUNT_DIR, 'token')))
        throw new StartupError(
          `${purpose}: this pod has no service account token at ${SERVICE_ACCOUNT_DIR}/token: set automountServiceAccountToken: true on the pod (the chart does in resource mode and with a \`service:\` provider)`,
        );
      from = 'the service account of this pod';
      kubeConfig.loadFromCluster();
    } else {
      const file = join(homedir(), '.kube', 'config');
      if (!existsSync(file))
        throw new StartupError(
          `${purpose}: no Kubernetes credentials: not in a pod (KUBERNETES_SERVICE_HOST is not set), KUBECONFIG is not set and ~/.kube/config does not exist`,
        );
      from = file;
      kubeConfig.loadFromFile(file);
    }
  } catch (error) {
    if (error instanceof StartupError) throw error;
    throw new StartupError(`${purpose}: cannot load ${from}: ${loadFailure(error)}`);
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null)
    throw new StartupError(
      `${purpose}: the credentials from ${from} name no current cluster (set a current context)`,
    );
  return { kubeConfig, from, server: cluster.server };
}
