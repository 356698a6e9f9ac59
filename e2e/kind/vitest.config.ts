import { defineConfig } from 'vitest/config';

// The kind e2e (e2e/kind/run.sh): one file, steps in order, against a real cluster.
export default defineConfig({
  test: {
    include: ['e2e/kind/**/*.kind.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    reporters: ['default'],
  },
});
