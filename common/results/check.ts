/**
 * A self-check of a result: two figures measured independently, compared, so that it can fail (every check has a
 * unit test that breaks the data it reads). Shown in the report, never hidden.
 */
export interface Check {
  name: string;
  /** What it is about: a host, a class, "durability". */
  scope: string;
  ok: boolean;
  detail: string;
  /** A failed "warning" flags a caveat (a tiny preset's data fits in RAM) rather than a wrong result; default "error". */
  severity?: 'error' | 'warning';
}
