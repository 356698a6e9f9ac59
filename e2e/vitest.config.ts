import { defineConfig } from 'vitest/config';

// Local end-to-end: the real programs on loopback, driven as a user and an orchestrator would.
export default defineConfig({
  test: {
    include: ['e2e/local/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
