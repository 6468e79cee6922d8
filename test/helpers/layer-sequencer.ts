/**
 * Runs the test layers cheapest first: unit, workflow, integration, e2e, faults. Within a layer, the files jest
 * recorded as slowest go first (its default order; file size on a fresh clone), so with two workers the last long
 * file does not start when the other worker has nothing left.
 */
import Sequencer from '@jest/test-sequencer';
import type { Test } from '@jest/test-result';

const LAYERS = ['unit', 'workflow', 'integration', 'e2e', 'faults'];

function layer(test: Test): number {
  const i = LAYERS.findIndex((l) => test.path.includes(`/test/${l}/`));
  return i < 0 ? LAYERS.length : i;
}

export default class LayerSequencer extends Sequencer {
  sort(tests: Test[]): Test[] {
    // Array.prototype.sort is stable: the default order (slowest first) holds within each layer.
    const slowestFirst = super.sort(tests) as Test[];
    return [...slowestFirst].sort((a, b) => layer(a) - layer(b));
  }
}
