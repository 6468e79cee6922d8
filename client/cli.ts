#!/usr/bin/env node
/**
 * storage-lab: start and watch experiments, drills and schedules; manage the local dev services.
 * Commands load lazily (client/program.ts); one top-level catch maps a user error to exit code 2 and an internal one
 * to a stack trace.
 */
import { buildProgram } from './program';
import { UserError } from './errors';

buildProgram().parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof UserError) {
    console.error(`storage-lab: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
