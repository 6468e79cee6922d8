import { fileKey, startOrder } from '../helpers/layer-sequencer';

describe('the order the suite\'s files start in', () => {
  const seconds = { 'unit/spec': 2, 'unit/predict': 9, 'workflow/replay': 36, 'integration/drills': 233, 'e2e/cli': 117, 'faults/dead-hosts': 233, 'faults/server-restart': 32 };

  it('takes a file\'s key from its compiled path', () => {
    expect(fileKey('/root/cc/x/dist/test/faults/dead-hosts.test.js')).toBe('faults/dead-hosts');
    expect(fileKey('/a/test/b/dist/test/unit/spec.test.js')).toBe('unit/spec');
  });

  it('starts the unit layer first, then the rest longest first', () => {
    expect(startOrder(Object.keys(seconds).reverse(), seconds)).toEqual([
      'unit/predict',
      'unit/spec',
      'faults/dead-hosts',
      'integration/drills',
      'e2e/cli',
      'workflow/replay',
      'faults/server-restart',
    ]);
  });

  it('puts a file the table does not know at its layer\'s longest, and at the longest of all in a new layer', () => {
    const order = startOrder(['e2e/cli', 'e2e/new-one', 'workflow/replay', 'faults/server-restart', 'other/x'], seconds);
    expect(order.indexOf('e2e/new-one')).toBeLessThan(order.indexOf('workflow/replay'));
    expect(order[0]).toBe('other/x');
    expect(startOrder(['faults/server-restart', 'faults/new'], seconds)).toEqual(['faults/new', 'faults/server-restart']);
  });

  it('keeps every file once, with no table at all', () => {
    const keys = ['faults/b', 'unit/a', 'e2e/c'];
    expect(startOrder(keys, {})).toEqual(['unit/a', 'e2e/c', 'faults/b']);
  });
});
