/**
 * The Kubernetes credentials of resource mode. In a pod, the service account (its token file is
 * re-read as the kubelet rotates it); outside a cluster, `KUBECONFIG` or `~/.kube/config`, as
 * kubectl reads them. `KUBECONFIG` wins when set, so a pod can be pointed elsewhere on purpose.
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

export function loadKubeConfig(
  env: NodeJS.ProcessEnv = process.env,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
): LoadedKubeConfig {
  const kubeConfig = new KubeConfig();
  let from: string;
  try {
    if (env.KUBECONFIG) {
      kubeConfig.loadFromDefault();
      from = `KUBECONFIG (${env.KUBECONFIG})`;
    } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
      if (!existsSync(join(serviceAccountDir, 'token')))
        throw new StartupError(
          `--config-resource: this pod has no service account token at ${serviceAccountDir}/token: set automountServiceAccountToken: true on the pod (the chart does in resource mode)`,
        );
      kubeConfig.loadFromCluster();
      from = 'the service account of this pod';
    } else {
      const file = join(homedir(), '.kube', 'config');
      if (!existsSync(file))
        throw new StartupError(
          '--config-resource: no Kubernetes credentials: not in a pod (KUBERNETES_SERVICE_HOST is not set), KUBECONFIG is not set and ~/.kube/config does not exist',
        );
      kubeConfig.loadFromFile(file);
      from = file;
    }
  } catch (error) {
    if (error instanceof StartupError) throw error;
    throw new StartupError(
      `--config-resource: cannot load the Kubernetes credentials: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null)
    throw new StartupError(
      `--config-resource: the credentials from ${from} name no current cluster (set a current context)`,
    );
  return { kubeConfig, from, server: cluster.server };
}
