/**
 * Refreshes test/file-times.json (the start order's table, test/helpers/layer-sequencer.ts) from a whole run's
 * `jest --json --outputFile=F`: each file's wall time, in whole seconds.
 *   node dist/test/helpers/file-times.js F
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { FILE_TIMES, fileKey } from './layer-sequencer';

interface JestJson {
  testResults: { name: string; startTime: number; endTime: number }[];
}

export function fileTimes(run: JestJson): Record<string, number> {
  const rows = run.testResults.map((r) => [fileKey(r.name), Math.max(1, Math.round((r.endTime - r.startTime) / 1000))] as const);
  return Object.fromEntries(rows.sort(([a], [b]) => a.localeCompare(b)));
}

if (require.main === module) {
  const input = process.argv[2];
  if (!input) throw new Error('usage: node dist/test/helpers/file-times.js <jest --json output file>');
  const times = fileTimes(JSON.parse(readFileSync(input, 'utf8')) as JestJson);
  writeFileSync(FILE_TIMES, `${JSON.stringify(times, null, 2)}\n`);
  console.log(`${Object.keys(times).length} files, ${Object.values(times).reduce((a, b) => a + b, 0)} s in all -> ${FILE_TIMES}`);
}
