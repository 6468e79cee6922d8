#!/usr/bin/env node
/**
 * storage-lab: start and watch experiments, drills and schedules; manage the local dev services.
 * Commands load lazily (client/program.ts); one top-level catch prints an expected failure (a user's mistake, this
 * machine's setup) as one line with its fix, exit code 2, and an internal one with its stack trace, exit code 1.
 */
import { buildProgram } from './program';
import { cliFailure } from './errors';

buildProgram().parseAsync(process.argv).catch((err: unknown) => {
  const failure = cliFailure(err);
  console.error(failure.message === null ? err : `storage-lab: ${failure.message}`);
  process.exit(failure.exitCode);
});
