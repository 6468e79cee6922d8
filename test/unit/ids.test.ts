/** The one rule for ids that become path segments (common/core/ids.ts): every refusal, and the mapping of the lab's own ids. */
import { CHILD_ID_ROOM, MAX_ID_LENGTH, UnsafeIdError, hostIdFor, runFolderName, safeSegment, segmentProblem, workflowIdProblem } from '../../common/core/ids';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { drillWorkflowId } from '../../workflows/drill-children';
import { comparedDrillId } from '../../common/input/tool-comparison';

describe('path segments', () => {
  it.each([
    ['', /must not be empty/],
    ['.', /names a folder itself or its parent/],
    ['..', /names a folder itself or its parent/],
    ['a/b', /must not contain "\/"/],
    ['a\u0000b', /NUL or other control characters/],
    ['a\nb', /NUL or other control characters/],
    ['tab\there', /NUL or other control characters/],
    ['del\u007f', /NUL or other control characters/],
    ['-rf', /must not start with "-"/],
    ['x'.repeat(MAX_ID_LENGTH + 1), new RegExp(`is ${MAX_ID_LENGTH + 1} characters long, more than ${MAX_ID_LENGTH}`)],
  ])('refuses %j', (name, why) => {
    expect(segmentProblem(name)).toMatch(why);
    expect(() => safeSegment(name, 'hostId')).toThrow(UnsafeIdError);
    expect(() => safeSegment(name, 'hostId')).toThrow(/^hostId: .*; use letters, digits, "-" and "_"$/s);
  });

  it.each(['gp3', '0pcays0-gp3-0', 'run_gp3-0', '.hidden', 'a..b', 'x'.repeat(MAX_ID_LENGTH)])('accepts %j', (name) => {
    expect(segmentProblem(name)).toBeNull();
    expect(safeSegment(name, 'hostId')).toBe(name);
  });
});

describe('run folders', () => {
  it('maps what a file name cannot hold to "_", as results were always stored', () => {
    expect(runFolderName('exp-record-8282-mx4a4gf2-2')).toBe('exp-record-8282-mx4a4gf2-2');
    expect(runFolderName('run/gp3-0')).toBe('run_gp3-0');
    expect(runFolderName('nightly/experiment/restore-drill')).toBe('nightly_experiment_restore-drill');
    expect(runFolderName('monitor@db:5432/app')).toBe('monitor_db_5432_app');
    expect(runFolderName('a b\u0000c')).toBe('a_b_c');
  });

  it.each([
    ['.', /names a folder itself or its parent/],
    ['..', /names a folder itself or its parent/],
    ['', /must not be empty/],
    ['-rf', /must not start with "-"/],
    ['_history', /reserved for the lab's own index of runs/],
    ['/history', /reserved for the lab's own index of runs/],
    ['y'.repeat(MAX_ID_LENGTH + 1), /characters long/],
  ])('refuses %j, naming runId', (id, why) => {
    expect(() => runFolderName(id)).toThrow(why);
    expect(() => runFolderName(id)).toThrow(/^runId: .*; use another id$/s);
  });
});

describe('workflow ids', () => {
  it.each([
    ['.', /part "\." names a folder itself/],
    ['..', /part "\.\." names a folder itself/],
    ['a/../..', /part "\.\." names a folder itself/],
    ['../x', /part "\.\." names a folder itself/],
    ['x/./y', /part "\." names a folder itself/],
    ['-rf', /part "-rf" must not start with "-"/],
    ['a/-rf', /part "-rf" must not start with "-"/],
    ['a\u0000b', /NUL or other control characters/],
    ['a//b', /part "" must not be empty/],
    ['/abs', /part "" must not be empty/],
    ['', /must not be empty/],
    ['_history', /reserved for the lab's own index of runs; use another workflow id/],
  ])('refuses %j', (id, why) => {
    expect(workflowIdProblem(id)).toMatch(why);
  });

  it('bounds a run without a parent so that its children still fit', () => {
    const top = 'r'.repeat(MAX_ID_LENGTH - CHILD_ID_ROOM);
    expect(workflowIdProblem(top, MAX_ID_LENGTH - CHILD_ID_ROOM)).toBeNull();
    expect(workflowIdProblem(`${top}r`, MAX_ID_LENGTH - CHILD_ID_ROOM)).toMatch(/use at most 160 \(the lab's child runs append up to 40\)/);
    // The deepest child the lab makes: a nightly run's experiment's cluster of a 20-character class, index 15.
    const deepest = clusterWorkflowId(`${top}/experiment`, 'c'.repeat(20), 15);
    expect(deepest.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
    expect(workflowIdProblem(deepest)).toBeNull();
  });

  it("accepts the lab's own ids and its children's", () => {
    for (const id of [
      'exp-record-8282-mx4a4gf2-2',
      'failoverDrillWorkflow-8282-mx4a59oe-4',
      clusterWorkflowId('exp-1', 'local-disk', 0),
      drillWorkflowId('nightly-1/experiment', 'failover'),
      comparedDrillId('cmp-1', 'pgbackrest'),
      'scheduled-nightly-2026-12-01T02:00:00Z',
    ])
      expect([id, workflowIdProblem(id)]).toEqual([id, null]);
  });

  it('derives host ids that are always one safe segment', () => {
    expect(segmentProblem(hostIdFor('../../etc', 'gp3', 0))).toBeNull();
    expect(hostIdFor('r', 'gp3', 0)).toMatch(/^[0-9a-z]{7}-gp3-0$/);
  });
});
