import {
  DRILL_PRESET_NAMES,
  drillInputFor,
  drillPostgresSettings,
  resolveFailoverDrill,
  resolvePartitionDrill,
  resolveRestoreDrill,
} from '../../common/input/drill-spec';
import { PRESET_NAMES } from '../../common/input/presets';
import { resolveSpec } from '../../common/input/resolve';
import { problemsOf } from '../helpers/spec-problems';

describe('drill specs', () => {
  it.each(DRILL_PRESET_NAMES)('preset %s resolves for every drill', (preset) => {
    expect(resolveRestoreDrill({ preset }).preset).toBe(preset);
    expect(resolveFailoverDrill({ preset }).preset).toBe(preset);
    expect(resolvePartitionDrill({ preset }).preset).toBe(preset);
  });

  it('gives the partition drill no way to empty its quorum, and runs it on this machine only', () => {
    const spec = resolvePartitionDrill({ preset: 'ci', rounds: 10, partition: { cutWriter: true } });
    expect(spec).toMatchObject({ rounds: 10, partition: { cutWriter: true, detectionSeconds: 1, fenceProbeSeconds: 1 }, backup: { enabled: true } });
    expect(resolvePartitionDrill({ preset: 'ci' }).partition.cutWriter).toBe(false);
    // No mode field, and synchronous_standby_names stays a refused setting.
    expect(problemsOf(resolvePartitionDrill, { preset: 'ci', mode: 'async' })).toEqual([expect.objectContaining({ path: 'mode', message: expect.stringMatching(/unknown field/) })]);
    expect(problemsOf(resolvePartitionDrill, { preset: 'ci', postgres: { settings: { synchronous_standby_names: '' } } })).toEqual([
      expect.objectContaining({ path: 'postgres.settings.synchronous_standby_names', message: expect.stringMatching(/^refused: .*partition drill/) }),
    ]);
    const problems = problemsOf(resolvePartitionDrill, {
      preset: 'ci',
      provider: 'aws',
      rounds: 51,
      writer: { cutAfterSeconds: 0.1 },
      partition: { detectionSeconds: -1, fenceProbeSeconds: 61, cutWriter: 'yes' },
    });
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p.message]));
    expect(Object.keys(byPath)).toEqual(
      expect.arrayContaining(['rounds', 'writer.cutAfterSeconds', 'partition.detectionSeconds', 'partition.fenceProbeSeconds', 'partition.cutWriter']),
    );
    expect(byPath['partition.cutWriter']).toBe('must be true or false');
    expect(byPath['partition.fenceProbeSeconds']).toMatch(/at most 60/);
    // Every problem at once, the provider's among them once the rest is valid.
    expect(problemsOf(resolvePartitionDrill, { preset: 'ci', provider: 'aws', aws: { region: 'eu-west-1', subnetId: 'subnet-1', temporalAddress: 'temporal:7233' }, backup: { store: { kind: 's3', bucket: 'lab-backups' } }, storageClass: { kind: 'ebs' } })).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'provider', message: expect.stringMatching(/nftables.*use "local"/) })]),
    );
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

  it('backs up with WAL-G by default, lz4, one full backup; the failover drill archives too', () => {
    const restore = resolveRestoreDrill({ preset: 'ci' });
    expect(restore.backup).toMatchObject({ tool: 'wal-g', compression: 'lz4', kind: 'full', keep: false });
    const failover = resolveFailoverDrill({ preset: 'ci' });
    expect(failover.backup).toMatchObject({ enabled: true, tool: 'wal-g', compression: 'lz4', store: { kind: 'folder' } });
    expect(resolveRestoreDrill({ preset: 'ci', backup: { tool: 'pgbackrest', compression: 'bzip2', kind: 'delta' } }).backup).toMatchObject({
      tool: 'pgbackrest',
      compression: 'bzip2',
      kind: 'delta',
    });
  });

  it('refuses backup tool combinations that cannot work, naming the field and the fix', () => {
    const s3 = (endpoint: string) => ({ kind: 's3', bucket: 'lab-backups', endpoint });
    // pgBackRest talks to S3 over TLS only; WAL-G takes plain HTTP (moto, MinIO).
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', backup: { tool: 'pgbackrest', store: s3('http://127.0.0.1:9000') } })).toEqual([
      expect.objectContaining({ path: 'backup.store.endpoint', message: expect.stringMatching(/TLS only.*set backup\.tool to "wal-g"/) }),
    ]);
    expect(() => resolveRestoreDrill({ preset: 'ci', backup: { tool: 'pgbackrest', store: s3('https://minio.internal:9000') } })).not.toThrow();
    expect(() => resolveRestoreDrill({ preset: 'ci', backup: { store: s3('http://127.0.0.1:9000') } })).not.toThrow();
    // Each tool writes its own set of compressions; the message lists them and names the other tool when it can.
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', backup: { compression: 'bzip2' } })).toEqual([
      expect.objectContaining({ path: 'backup.compression', message: 'wal-g cannot compress with bzip2; use lz4, zstd, lzma, none, or set backup.tool to "pgbackrest"' }),
    ]);
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', backup: { tool: 'pgbackrest', compression: 'lzma' } })[0].message).toMatch(/set backup\.tool to "wal-g"/);
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', backup: { tool: 'barman' } })).toEqual([
      expect.objectContaining({ path: 'backup.tool', message: 'must be "wal-g" or "pgbackrest"' }),
    ]);
    // The failover drill's archive follows the same rules; with the archive off they do not apply.
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', backup: { tool: 'pgbackrest', store: s3('http://127.0.0.1:9000') } })).toEqual([
      expect.objectContaining({ path: 'backup.store.endpoint' }),
    ]);
    expect(() => resolveFailoverDrill({ preset: 'ci', backup: { tool: 'pgbackrest', enabled: false, store: s3('http://127.0.0.1:9000') } })).not.toThrow();
    // An experiment's durability section follows the same rules, named by its own fields.
    expect(problemsOf(() => resolveSpec({ preset: 'ci', durability: { enabled: true, tool: 'pgbackrest', backupStore: s3('http://127.0.0.1:9000') } }), null)).toEqual([
      expect.objectContaining({ path: 'durability.backupStore.endpoint' }),
    ]);
    expect(problemsOf(() => resolveSpec({ preset: 'ci', durability: { drills: ['failover'], compression: 'gzip' } }), null)).toEqual([
      expect.objectContaining({ path: 'durability.compression', message: expect.stringContaining('set durability.tool to "pgbackrest"') }),
    ]);
    expect(() => resolveSpec({ preset: 'ci', durability: { enabled: false, tool: 'pgbackrest', compression: 'lzma' } })).not.toThrow();
  });

  it('gives an experiment\'s drills its backup tool, compression, store and archive_timeout', () => {
    const spec = resolveSpec({ preset: 'ci', durability: { drills: ['restore', 'failover', 'partition'], compression: 'zstd', archiveTimeoutSeconds: 7 } });
    for (const kind of ['restore', 'failover', 'partition'] as const) {
      const backup = { restore: resolveRestoreDrill, failover: resolveFailoverDrill, partition: resolvePartitionDrill }[kind](drillInputFor(kind, spec)).backup;
      expect(backup).toMatchObject({ tool: 'wal-g', compression: 'zstd', archiveTimeoutSeconds: 7, store: { kind: 'folder' } });
    }
  });

  it('runs an experiment\'s partition drill on this machine only', () => {
    expect(() => resolveSpec({ preset: 'ci', durability: { drills: ['partition'] } })).not.toThrow();
    expect(problemsOf(resolveSpec, { preset: 'seed-full', durability: { drills: ['partition'], backupStore: { kind: 's3', bucket: 'lab-backups' } } })).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'durability.drills', message: expect.stringMatching(/provider "local" only/) })]),
    );
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
    // Local drills need Debian's 15 (its pg_basebackup, pg_rewind and pgBackRest); local-quick and reference-scaled run 17.
    const postgres = preset !== 'seed-full' && resolveSpec({ preset }).postgres.version !== 15 ? { version: 15, directIo: 'off' } : {};
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
