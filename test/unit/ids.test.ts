/** The one rule for ids that become path segments (common/core/ids.ts): every refusal, and the mapping of the lab's own ids. */
import { createHash } from 'node:crypto';
import {
  CHILD_ID_ROOM,
  DATA_SETS_FOLDER,
  HOST_FOLDER_LENGTH,
  MAX_FOLDER_LENGTH,
  MAX_ID_LENGTH,
  UnsafeIdError,
  dataSetKeyOf,
  escapeRunId,
  fnv32RunTag,
  hostFolderName,
  hostIdFor,
  isDataSetKey,
  legacyRunFolderName,
  nameSchemeOf,
  runFolderName,
  runIdOfFolder,
  runTag,
  safeSegment,
  segmentProblem,
  workflowIdProblem,
} from '../../common/core/ids';
import { base32 } from '../../common/core/sha256';
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
  it('escapes what a file name cannot hold injectively: "_" doubles, every other character is "_" and its UTF-8 bytes in hex', () => {
    expect(runFolderName('exp-record-8282-mx4a4gf2-2')).toBe('exp-record-8282-mx4a4gf2-2');
    expect(runFolderName('run/gp3-0')).toBe('run_2fgp3-0');
    expect(runFolderName('nightly/experiment/restore-drill')).toBe('nightly_2fexperiment_2frestore-drill');
    expect(runFolderName('monitor@db:5432/app')).toBe('monitor_40db_3a5432_2fapp');
    expect(runFolderName('a b\u0000c')).toBe('a_20b_00c');
    expect(runFolderName('exp_1')).toBe('exp__1');
    expect(runFolderName('café')).toBe('caf_c3_a9');
  });

  it('never maps two ids to one folder: the pairs that shared one before (x_y, x/y) and prefix tricks around "_"', () => {
    const pairs = [
      ['x_y', 'x/y'],
      ['a/_b', 'a_/b'],
      ['a_2fb', 'a/b'],
      ['a__b', 'a_b'],
      ['a b', 'a_b'],
      ['run_gp3-0', 'run/gp3-0'],
    ];
    for (const [a, b] of pairs) {
      expect([a, b, runFolderName(a) === runFolderName(b)]).toEqual([a, b, false]);
      // Before, the first pairs shared a folder: the reason for the change.
      if (a === 'x_y') expect(legacyRunFolderName(a)).toBe(legacyRunFolderName(b));
    }
  });

  it('reads every folder back to its id (a one-to-one mapping), and refuses names no id escapes to', () => {
    const ids = ['x_y', 'x/y', 'a/_b', 'a_/b', '__', '_', 'nightly/experiment/gp3-0', 'monitor@db:5432/app', '実験/🐘', 'a.b-c'];
    for (let i = 0; i < 2000; i++) ids.push(Array.from({ length: 1 + (i % 12) }, (_, k) => '_/a-.é'[(i * 7 + k * 13) % 6]).join(''));
    const folders = new Map<string, string>();
    for (const id of ids) {
      const folder = escapeRunId(id);
      expect([id, runIdOfFolder(folder)]).toEqual([id, id]);
      if (folders.has(folder)) expect([folder, folders.get(folder)]).toEqual([folder, id]);
      folders.set(folder, id);
    }
    for (const bad of ['a_', 'a_2', 'a_zz', 'a_61', 'a_2F', 'a/b', 'a_c3']) expect([bad, runIdOfFolder(bad)]).toEqual([bad, null]);
  });

  it.each([
    ['.', /names a folder itself or its parent/],
    ['..', /names a folder itself or its parent/],
    ['', /must not be empty/],
    ['-rf', /must not start with "-"/],
    ['y'.repeat(MAX_FOLDER_LENGTH + 1), /characters long/],
    ['/'.repeat(MAX_FOLDER_LENGTH / 3 + 1), /characters long/],
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
    ['🐘'.repeat(20), /as a folder .* is 240 characters long, more than 236; use another workflow id/],
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

  it('a run without a parent leaves room in its folder for its children, escapes included', () => {
    const top = `${'a/'.repeat(35)}${'b'.repeat(MAX_FOLDER_LENGTH - CHILD_ID_ROOM - 6 - 35 * 4)}`;
    expect(escapeRunId(top).length).toBe(MAX_FOLDER_LENGTH - CHILD_ID_ROOM - 6);
    expect(workflowIdProblem(top, MAX_ID_LENGTH - CHILD_ID_ROOM)).toBeNull();
    expect(workflowIdProblem(`${top}b`, MAX_ID_LENGTH - CHILD_ID_ROOM)).toMatch(/use at most 190/);
    expect(workflowIdProblem(clusterWorkflowId(`${top}/experiment`, 'c'.repeat(20), 15))).toBeNull();
    // The reserved history and data set folders cannot be reached: "_" is always escaped.
    expect(runFolderName('_history')).toBe('__history');
    expect(runFolderName(DATA_SETS_FOLDER)).toBe('__datasets');
    // The old escaping kept "_": a run id of that spelling would have named the data sets' folder, so it names none.
    expect(legacyRunFolderName(DATA_SETS_FOLDER)).toBeNull();
  });
});

describe('host ids and host folders', () => {
  it('tags a run with 130 bits of SHA-256 (26 base-32 characters), and every host id is one safe segment', () => {
    expect(runTag('r')).toBe(base32(createHash('sha256').update('r').digest()).slice(0, 26));
    expect(hostIdFor('r', 'gp3', 0)).toMatch(/^[a-z2-7]{26}-gp3-0$/);
    expect(segmentProblem(hostIdFor('../../etc', 'gp3', 0))).toBeNull();
    expect(nameSchemeOf(hostIdFor('r', 'gp3', 0))).toBe('sha256');
  });

  it('keeps the 32-bit tag of runs started before (replay), whose collisions take seconds to find', () => {
    expect(hostIdFor('r', 'gp3', 0, 'fnv32')).toBe(`${fnv32RunTag('r')}-gp3-0`);
    expect(hostIdFor('r', 'gp3', 0, 'fnv32')).toMatch(/^[0-9a-z]{7}-gp3-0$/);
    expect(nameSchemeOf(hostIdFor('r', 'gp3', 0, 'fnv32'))).toBe('fnv32');
    // The case: a second id with the same 32-bit tag. FNV-1a's last step is invertible, so it takes one
    // prefix in 65,536 and one chosen character: milliseconds.
    const P = 0x01000193n;
    const M = 2n ** 32n;
    let Pinv = 1n;
    for (let i = 0; i < 6; i++) Pinv = (Pinv * (2n - P * Pinv)) % M;
    const fnvState = (s: string) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
      return h;
    };
    const target = BigInt(fnvState('victim'));
    const before = Number((((target * Pinv) % M) + M) % M);
    let found = '';
    for (let i = 0; i < 1_000_000 && !found; i++) {
      const c = (before ^ fnvState(`attacker-${i}-`)) >>> 0;
      if (c < 0xd800) found = `attacker-${i}-${String.fromCharCode(c)}`;
    }
    expect(found).not.toBe('');
    expect(hostIdFor(found, 'gp3', 0, 'fnv32')).toBe(hostIdFor('victim', 'gp3', 0, 'fnv32'));
    expect(hostIdFor(found, 'gp3', 0)).not.toBe(hostIdFor('victim', 'gp3', 0));
  });

  it('names a local host folder with 80 bits of its host id, short enough for the socket below a long hosts folder', () => {
    const hostId = hostIdFor('r'.repeat(160), 'c'.repeat(20), 15);
    expect(hostId.length).toBe(26 + 1 + 20 + 1 + 2);
    expect(hostFolderName(hostId)).toMatch(new RegExp(`^[a-z2-7]{${HOST_FOLDER_LENGTH}}$`));
    expect(hostFolderName(hostId)).toBe(base32(createHash('sha256').update(`host-folder:${hostId}`).digest()).slice(0, 16));
    // A host of a run started before keeps its folder.
    expect(hostFolderName(hostIdFor('r', 'gp3', 0, 'fnv32'))).toBe(hostIdFor('r', 'gp3', 0, 'fnv32'));
    // 107 bytes: "<hosts>/<folder>/run/.s.PGSQL.65535" leaves 71 for the hosts folder.
    expect(`/${hostFolderName(hostId)}/run/.s.PGSQL.65535`.length).toBe(107 - 71);
  });
});

describe('data set keys', () => {
  it('are ds- and 130 bits of SHA-256 of the parts\' text (26 base-32 characters): one safe segment, whatever the text', () => {
    const key = dataSetKeyOf('{"scale":1}');
    expect(key).toBe(`ds-${base32(createHash('sha256').update('storage-lab data set:{"scale":1}').digest()).slice(0, 26)}`);
    expect(isDataSetKey(key)).toBe(true);
    expect(segmentProblem(dataSetKeyOf('../../etc/passwd'))).toBeNull();
    expect(dataSetKeyOf('{"scale":2}')).not.toBe(key);
  });

  it('refuse anything dataSetKeyOf could not have made', () => {
    for (const bad of ['../x', 'ds-', `ds-${'a'.repeat(25)}`, `ds-${'a'.repeat(27)}`, `DS-${'a'.repeat(26)}`, `ds-${'1'.repeat(26)}`, `ds-${'a'.repeat(26)}/..`, 42, null, undefined])
      expect([bad, isDataSetKey(bad)]).toEqual([bad, false]);
  });
});
