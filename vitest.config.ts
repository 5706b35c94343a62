import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: many tests run the CLI, which is slow on a loaded machine; speed is measured by npm run bench.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // See test/setup/yield.ts: synchronous tests must not starve vitest's own RPC.
    setupFiles: ['test/setup/yield.ts'],
    // The JSON report is what .ci/run counts; the default reporter is what people read.
    reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
  },
});
