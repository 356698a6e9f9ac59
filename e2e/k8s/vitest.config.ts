import { defineConfig } from 'vitest/config';

// The real-cluster suite (e2e/k8s/run.sh): files one after the other, steps in order inside each,
// against the cluster of KUBECONFIG.
export default defineConfig({
  test: {
    include: ['e2e/k8s/**/*.k8s.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    sequence: { shuffle: false },
    bail: 0,
    reporters: ['default'],
  },
});
