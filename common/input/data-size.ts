/** The size of pgbench's data at a scale: its rows and their bytes on disk. Pure, a leaf every sizing rule shares. */

/** pgbench_accounts on disk with its indexes: ~146 bytes a row at fillfactor 100 (482 GiB for 3.3 billion rows), +15 %. */
export function dataSetBytes(scale: number): number {
  return accountRows(scale) * 146 * 1.15;
}

/** Rows in pgbench_accounts at a scale, as pgbench makes them. */
export function accountRows(scale: number): number {
  return scale * 100_000;
}
