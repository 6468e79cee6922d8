// Tests run on the compiled output (npm test builds first), so workers, host agents and tests share one build.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/dist/test'],
  testMatch: ['**/*.test.js'],
  globalSetup: '<rootDir>/dist/test/helpers/global-setup.js',
  globalTeardown: '<rootDir>/dist/test/helpers/global-teardown.js',
  testTimeout: 10 * 60 * 1000,
  maxWorkers: 1,
  // Layers run cheapest first so a broken parser fails in seconds, not after the end-to-end runs.
  testSequencer: '<rootDir>/dist/test/helpers/layer-sequencer.js',
  verbose: true,
};
