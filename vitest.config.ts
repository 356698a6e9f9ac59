import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The local end-to-end suite runs here too, so every `make test` proves the lifecycle claims.
    include: ['test/**/*.test.ts', 'e2e/local/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/fast-check-seed.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
