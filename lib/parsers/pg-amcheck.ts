/**
 * pg_amcheck output → the corruption it found. A clean run prints nothing (exit 0); each problem is a header line
 * naming the relation (and block/offset for heap tables) followed by indented lines saying what is wrong (exit 2).
 * Tested on real PostgreSQL 15 output in test/fixtures/postgres-15/pg_amcheck-*.txt.
 */

export interface AmcheckReport {
  problems: number;
  /** Relations with at least one problem, as pg_amcheck names them ("db.schema.relation"). */
  relations: string[];
  /** The first few problems, header and detail on one line each. */
  sample: string[];
}

const HEADER = /^(heap table|btree index|heap relation|index) "([^"]+)"(.*):$/;

export function parseAmcheck(output: string, sampleSize = 5): AmcheckReport {
  const lines = output.split('\n');
  const relations = new Set<string>();
  const sample: string[] = [];
  let problems = 0;
  for (let i = 0; i < lines.length; i++) {
    const m = HEADER.exec(lines[i]);
    if (!m) continue;
    problems++;
    relations.add(m[2]);
    const detail: string[] = [];
    for (let j = i + 1; j < lines.length && /^\s/.test(lines[j]); j++) detail.push(lines[j].trim());
    if (sample.length < sampleSize) sample.push(`${m[1]} ${m[2]}${m[3]}: ${detail.join(' ')}`);
  }
  return { problems, relations: [...relations], sample };
}
