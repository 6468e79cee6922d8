// Tests run on the compiled output (npm test builds first), so workers, host agents and tests share one build.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/dist/test'],
  testMatch: ['**/*.test.js'],
  // dist is plain CommonJS already: without this jest runs babel over every module it loads (8 s of CPU for the control
  // worker's imports in a fresh clone's first file, 2 s without), and no test relies on babel (no jest.mock hoisting).
  transform: {},
  globalSetup: '<rootDir>/dist/test/helpers/global-setup.js',
  globalTeardown: '<rootDir>/dist/test/helpers/global-teardown.js',
  testTimeout: 10 * 60 * 1000,
  // Three files at a time by default (STORAGE_LAB_TEST_WORKERS=1 for one): every file has its own lab home and task
  // queue, unique workflow ids, leftover checks scoped to its own lab, no fixed port or schedule name
  // (docs/benchmarks.md, "Test suite"). Most of a file's time is waiting (timers, pgbench windows, hosts starting):
  // with two files at a time the suite kept 2 cores 81 % busy, and beside a CPU hog on both cores it took 1,330 s from
  // a clean clone; with three, 1,097-1,140 s, and 809-838 s idle (2026-12-04, docs/benchmarks.md).
  maxWorkers: Number(process.env.STORAGE_LAB_TEST_WORKERS ?? 3),
  // The unit layer first so a broken parser fails in seconds, then the longest files first (test/file-times.json).
  testSequencer: '<rootDir>/dist/test/helpers/layer-sequencer.js',
  verbose: true,
};
