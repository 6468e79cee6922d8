import {
  DRILL_PRESET_NAMES,
  drillPostgresSettings,
  resolveFailoverDrill,
  resolveRestoreDrill,
} from '../../common/drill-spec';
import { PRESET_NAMES } from '../../common/presets';
import { InvalidSpecError, resolveSpec } from '../../common/spec';
import { drillInputFor } from '../../workflows/experiment-drills';

function problemsOf(resolve: (input: unknown) => unknown, input: unknown): { path: string; message: string }[] {
  try {
    resolve(input);
  } catch (err) {
    if (err instanceof InvalidSpecError) return err.problems;
    throw err;
  }
  throw new Error('expected the drill input to be rejected');
}

describe('drill specs', () => {
  it.each(DRILL_PRESET_NAMES)('preset %s resolves for both drills', (preset) => {
    expect(resolveRestoreDrill({ preset }).preset).toBe(preset);
    expect(resolveFailoverDrill({ preset }).preset).toBe(preset);
  });

  it('defaults to local-quick and fills every default', () => {
    const restore = resolveRestoreDrill({});
    expect(restore.preset).toBe('local-quick');
    expect(restore.backup.store).toEqual({ kind: 'folder' });
    expect(restore.inject.missingWalSegment).toBe(false);
    const failover = resolveFailoverDrill({ preset: 'ci', rounds: 5 });
    expect(failover.rounds).toBe(5);
    expect(failover.mode).toBe('sync');
    expect(failover.writer.connections).toBeGreaterThan(0);
  });

  it('names every problem with its dotted path and the fix, at once', () => {
    const problems = problemsOf(resolveRestoreDrill, {
      preset: 'ci',
      target: 'yesterday',
      workload: { beforeSeconds: 0 },
      checksumTables: ['Robert); DROP TABLE students;--'],
      backup: { store: { kind: 's3', bucket: 'b' } },
      inject: { missingWalSegment: true },
      restoreTimeoutSecs: 5,
    });
    const paths = problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining(['target', 'workload.beforeSeconds', 'checksumTables.0', 'backup.store.bucket', 'restoreTimeoutSecs']),
    );
    expect(problems.find((p) => p.path === 'target')!.message).toMatch(/"time", "lsn" or "latest"/);
    expect(problems.find((p) => p.path === 'restoreTimeoutSecs')!.message).toMatch(/unknown field/);
  });

  it('applies the semantic rules', () => {
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', inject: { missingWalSegment: true }, backup: { store: { kind: 's3', bucket: 'lab-backups' } } })).toEqual([
      expect.objectContaining({ path: 'inject.missingWalSegment', message: expect.stringMatching(/folder/) }),
    ]);
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', rounds: 5, rejoin: 'none' })).toEqual([
      expect.objectContaining({ path: 'rejoin', message: expect.stringMatching(/rewind/) }),
    ]);
    const aws = problemsOf(resolveFailoverDrill, { preset: 'ci', provider: 'aws' }).map((p) => p.path);
    expect(aws).toEqual(expect.arrayContaining(['storageClass.kind', 'aws']));
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', host: { memoryLimitMiB: 128 }, postgres: { sharedBuffersMiB: 64 } })).toEqual([
      expect.objectContaining({ path: 'host.memoryLimitMiB' }),
    ]);
  });

  it('rejects a non-object and an unknown preset, saying what to pass', () => {
    expect(problemsOf(resolveRestoreDrill, 'ci')[0].message).toMatch(/\{"preset":"ci"\}/);
    const [p] = problemsOf(resolveFailoverDrill, { preset: 'huge' });
    expect(p.path).toBe('preset');
    expect(p.message).toMatch(/ci, local-quick/);
    expect(() => resolveFailoverDrill({ preset: 'huge' })).toThrow(/Invalid failover drill spec/);
  });

  it.each(PRESET_NAMES)('an experiment (preset %s) derives valid drill inputs for its durability drills', (preset) => {
    const aws = preset === 'seed-full' ? { backupStore: { kind: 's3', bucket: 'lab-backups' } } : {};
    // Local drills need Debian's 15 (its pg_basebackup, pg_rewind and pgBackRest); local-quick runs 17.
    const postgres = preset === 'local-quick' ? { version: 15, directIo: 'off' } : {};
    const spec = resolveSpec({ preset, postgres, durability: { drills: ['restore', 'failover'], ...aws } });
    const restore = resolveRestoreDrill(drillInputFor('restore', spec));
    expect(restore.data.scale).toBe(spec.data.scale);
    expect(restore.backup.store).toEqual(spec.durability.backupStore);
    expect(restore.storageClass).toEqual(spec.storageClasses[spec.compare!.candidate]);
    const failover = resolveFailoverDrill(drillInputFor('failover', spec));
    expect(failover.postgres.sharedBuffersMiB).toBe(spec.postgres.sharedBuffersMiB);
    expect(failover.provider).toBe(spec.provider);
  });

  it('settings make every drill host a replication peer with UTC log timestamps', () => {
    const settings = drillPostgresSettings(resolveFailoverDrill({ preset: 'ci', postgres: { settings: { work_mem: '8MB' } } }));
    expect(settings).toMatchObject({ wal_level: 'replica', wal_log_hints: 'on', log_timezone: 'UTC', log_line_prefix: '%m [%p] ', work_mem: '8MB' });
  });
});
