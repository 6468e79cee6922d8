/** Specs for tests that measure the TPS run alone: every registered phase off, whichever phases there are. */
import { PHASES } from '../../common/phases/registry';

/** `phases` with every phase off (merged over a preset's, which sets each phase's sizes). */
export const NO_PHASES: Record<string, { enabled: false }> = Object.fromEntries(PHASES.map((p) => [p.name, { enabled: false }]));
