// Tests run on the compiled output (npm test builds first), so workers, host agents and tests share one build.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/dist/test'],
  testMatch: ['**/*.test.js'],
  globalSetup: '<rootDir>/dist/test/helpers/global-setup.js',
  globalTeardown: '<rootDir>/dist/test/helpers/global-teardown.js',
  testTimeout: 10 * 60 * 1000,
  // One file at a time by default: two at a time (STORAGE_LAB_TEST_WORKERS=2) is safe for isolation (every file has
  // its own lab home and task queue, unique workflow ids, leftover checks scoped to its own lab, no fixed port or
  // schedule name: docs/benchmarks.md, "Test suite"), but it has not yet passed a whole run on 2 cores, so it stays
  // opt-in until it has.
  maxWorkers: Number(process.env.STORAGE_LAB_TEST_WORKERS ?? 1),
  // Layers run cheapest first so a broken parser fails in seconds, not after the end-to-end runs.
  testSequencer: '<rootDir>/dist/test/helpers/layer-sequencer.js',
  verbose: true,
};
