/** The published experiment (POSETTE 2026), as data: the figures every report puts beside its own. */
import reference from './reference/posette-2026.json';

export type ReferenceClass = (typeof reference.results)['nvme'];
export const REFERENCE = reference;

/** The reference's classes in the roles our comparisons use: NVMe is the candidate, gp3 the baseline. */
export const REFERENCE_ROLES = { candidate: 'nvme', baseline: 'gp3' } as const;
