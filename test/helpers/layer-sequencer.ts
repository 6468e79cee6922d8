/**
 * The order the suite's files start in. The unit layer first, so a broken parser fails in seconds; then every other
 * file longest first, by the times a whole run recorded (test/file-times.json), so with two workers the last file to
 * start is a short one and neither worker waits long for the other at the end (longest-processing-time-first). A file
 * the table does not know yet (a new one) goes first among the rest, at its layer's longest time, so a slow new file
 * cannot become the tail. `node dist/test/helpers/file-times.js <jest --json output>` refreshes the table.
 */
import Sequencer from '@jest/test-sequencer';
import type { Test } from '@jest/test-result';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The table's file: seconds per test file, keyed by its path below test/ (`faults/dead-hosts`). */
export const FILE_TIMES = path.join(__dirname, '..', '..', '..', 'test', 'file-times.json');

/** A test file's key in the table, from its compiled path (…/dist/test/faults/dead-hosts.test.js). */
export function fileKey(testPath: string): string {
  const at = testPath.lastIndexOf(`${path.sep}test${path.sep}`);
  return testPath.slice(at + 6).replace(/\.test\.[jt]s$/, '').split(path.sep).join('/');
}

/** The order for the given keys and table: unit first (by key), then by recorded seconds, longest first. */
export function startOrder(keys: string[], seconds: Record<string, number>): string[] {
  const layerOf = (k: string) => k.split('/')[0];
  const layerLongest = new Map<string, number>();
  for (const [k, s] of Object.entries(seconds)) layerLongest.set(layerOf(k), Math.max(layerLongest.get(layerOf(k)) ?? 0, s));
  const longestOfAll = Math.max(0, ...layerLongest.values());
  const expected = (k: string) => seconds[k] ?? layerLongest.get(layerOf(k)) ?? longestOfAll;
  const unit = keys.filter((k) => layerOf(k) === 'unit').sort();
  const rest = keys.filter((k) => layerOf(k) !== 'unit').sort((a, b) => expected(b) - expected(a) || a.localeCompare(b));
  return [...unit, ...rest];
}

export function readFileTimes(file = FILE_TIMES): Record<string, number> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

export default class LayerSequencer extends Sequencer {
  sort(tests: Test[]): Test[] {
    const byKey = new Map(tests.map((t) => [fileKey(t.path), t]));
    return startOrder([...byKey.keys()], readFileTimes()).map((k) => byKey.get(k)!);
  }
}
