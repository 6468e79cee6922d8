/** Specs for tests that measure the TPS run alone: every registered phase off, whichever phases there are. */
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/workload-script';
import { PHASES } from '../../common/phases/registry';

/** `phases` with every phase off (merged over a preset's, which sets each phase's sizes). */
export const NO_PHASES: Record<string, { enabled: false }> = Object.fromEntries(PHASES.map((p) => [p.name, { enabled: false }]));

/**
 * For a fault test whose TPS run only has to be running (something is killed or stopped in it, or a second run is
 * started beside it), not to measure: pgbench's random UPDATE with a 20 ms pause after each transaction. Its clients
 * then use a few % of a core; at full speed they held both cores of the machine for the whole window, beside the
 * other test files (dead-hosts: 98 CPU-s of PostgreSQL in one file, docs/benchmarks.md).
 */
export const PACED_SCRIPT = `${RANDOM_UPDATE_SCRIPT}\\sleep 20 ms\n`;
