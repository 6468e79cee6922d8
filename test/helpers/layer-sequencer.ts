/** Runs the test layers cheapest first: unit, workflow, integration, e2e, faults. */
import Sequencer from '@jest/test-sequencer';
import type { Test } from '@jest/test-result';

const LAYERS = ['unit', 'workflow', 'integration', 'e2e', 'faults'];

function layer(test: Test): number {
  const i = LAYERS.findIndex((l) => test.path.includes(`/test/${l}/`));
  return i < 0 ? LAYERS.length : i;
}

export default class LayerSequencer extends Sequencer {
  sort(tests: Test[]): Test[] {
    return [...tests].sort((a, b) => layer(a) - layer(b) || a.path.localeCompare(b.path));
  }
}
