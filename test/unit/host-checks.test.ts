/**
 * The host's own checks of what reaches it: a value the workflow's door should have refused (anyone with start
 * rights writes the spec) is refused again by the host activity, non-retryable and naming the field, before the host
 * writes or runs anything. Also what the host renders from checked values: pg_hba.conf, pg_ident.conf, the archive
 * commands of the tool it configured, temp_file_limit; and the backup tools' config files.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { registerLabRoot } from '../../lib/lab-fs';
import os from 'node:os';
import path from 'node:path';
import { backupRecordFile } from '../../activities/host/archiving';
import type { HostDeps } from '../../activities/host/deps';
import { runBacklogPhase } from '../../activities/host/phases/backlog';
import { runPgbench } from '../../activities/host/pgbench';
import { configurePostgres, isFinalAttempt, labConfig, renderHba, renderIdent, tail, type LabConfigInput } from '../../activities/host/postgres';
import { cloneStandby, setReplication } from '../../activities/host/replication';
import { renderPgbackrestConfig } from '../../lib/pgbackrest';
import { renderWalgConfig } from '../../lib/walg';
import { configValueProblem } from '../../lib/backup-tool';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import { FAILURE_TYPES } from '../../common/core/errors';
import { labSettingProblems, synchronousStandbyNames, tempFileLimitKb } from '../../common/input/postgres-settings';
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { serverSettingsProblems } from '../../common/input/server-settings';
import type { HostConfig } from '../../common/core/hosts';
import { IoCap } from '../../lib/io-cap';

const HOST_ID = 'unit-host';
const OS_USERS = { osUser: { name: 'postgres', uid: 101, gid: 104 }, clientUser: { name: 'storage-lab', uid: 999, gid: 995 } };

/** A host folder in a temporary folder: nothing runs, so a check that lets a value through would write here. */
function fakeHost(): { deps: HostDeps; dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-host-checks-'));
  // The agent's roots: it reads and writes its host folder through the file guard.
  registerLabRoot(dir);
  mkdirSync(path.join(dir, 'disk'));
  const config: HostConfig = {
    hostId: HOST_ID,
    runId: 'unit',
    provider: 'local',
    className: 'local-disk',
    kind: 'local-disk',
    taskQueue: `host:${HOST_ID}`,
    emulated: false,
    limits: { iops: null, throughputMiBps: null, memoryLimitMiB: null },
    postgres: { host: '127.0.0.1', port: 1 },
    hostDir: dir,
    dataDir: path.join(dir, 'disk', 'pgdata'),
    socketDir: path.join(dir, 'run'),
    device: null,
    osUser: null,
    passwordFile: path.join(dir, 'secrets', 'db-password'),
    pgBinDir: '/nonexistent/bin',
    cgroup: null,
  };
  return { deps: { config, osUser: null, clientUser: null, ioCap: new IoCap(config) }, dir };
}

/** Runs an activity and returns its failure (an activity that does not fail fails the test). */
async function failureOf(run: () => Promise<unknown>): Promise<ApplicationFailure> {
  const outcome = await new MockActivityEnvironment().run(run).then(
    () => null,
    (e: unknown) => e,
  );
  expect(outcome).toBeInstanceOf(ApplicationFailure);
  return outcome as ApplicationFailure;
}

const LAB = { server: { shared_buffers: '32MB', max_connections: '40', wal_level: 'replica' }, user: { work_mem: '8MB' } } satisfies LabConfigInput;

describe("the host's re-checks of configurePostgres", () => {
  let host: ReturnType<typeof fakeHost>;
  beforeEach(() => (host = fakeHost()));
  afterEach(() => rmSync(host.dir, { recursive: true, force: true }));

  it.each<[string, Partial<LabConfigInput>, string]>([
    ['archive_command among the spec\'s settings', { user: { archive_command: 'touch /tmp/marker' } }, 'postgres.settings.archive_command: refused: runs a program'],
    ['ssl_passphrase_command (any *_command)', { user: { ssl_passphrase_command: 'touch /tmp/marker' } }, 'postgres.settings.ssl_passphrase_command: refused'],
    ['a newline in a setting\'s value', { user: { work_mem: "8MB'\narchive_command = 'touch /tmp/marker" } }, 'postgres.settings.work_mem: the value contains a control character'],
    ['a line of postgresql.conf as a setting\'s name', { user: { "work_mem = 1\narchive_command": 'x' } }, 'must be a server setting name'],
    ['temp_file_limit (the lab bounds it)', { user: { temp_file_limit: '-1' } }, 'postgres.settings.temp_file_limit: refused: managed by the lab itself'],
    ['archive_command posing as one of the lab\'s settings', { server: { archive_command: 'touch /tmp/marker' } as LabConfigInput['server'] }, 'server.archive_command: not a setting the lab manages'],
    ['a lab setting with a line end', { server: { shared_buffers: "32MB\narchive_command = 'touch /tmp/marker'" } }, 'server.shared_buffers: "32MB\\narchive_command'],
    ['an hba line as a peer', { replicationPeers: ['10.0.0.5/32 trust\nlocal all all trust'] }, 'replicationPeers[0]: "10.0.0.5/32 trust\\nlocal all all trust" is not an IPv4 or IPv6 address'],
    ['a network as a peer', { replicationPeers: ['0.0.0.0/0'] }, 'replicationPeers[0]: "0.0.0.0/0" is not an IPv4 or IPv6 address'],
    ['a negative archive timeout', { archiving: { archiveTimeoutSeconds: -1 } }, 'archiving.archiveTimeoutSeconds'],
    ['raw settings of the old input shape', { server: undefined, settings: { archive_command: 'x' } } as unknown as Partial<LabConfigInput>, "server: must be the lab's settings"],
  ])('refuses %s, naming it, before writing anything', async (_, change, fragment) => {
    const failure = await failureOf(() => configurePostgres(host.deps, { hostId: HOST_ID, ...LAB, ...change }));
    expect(failure.type).toBe(FAILURE_TYPES.invalidSpec);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(fragment);
    // Nothing on the host changed: no data folder, no initdb (its binary does not even exist here).
    expect(readdirSync(path.join(host.dir, 'disk'))).toEqual([]);
  });

  it('refuses archiving when configureBackups left no record of a tool', async () => {
    const failure = await failureOf(() => configurePostgres(host.deps, { hostId: HOST_ID, ...LAB, archiving: { archiveTimeoutSeconds: 60 } }));
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/no backup tool configured/);
  });

  it("writes archive_command from the tool configureBackups recorded, never from the input, and the host's own settings last", () => {
    const store: ResolvedBackupStore = { kind: 'folder', path: '/b/run-1' };
    writeFileSync(backupRecordFile(host.deps), JSON.stringify({ tool: 'pgbackrest', store }));
    const lab = labConfig(host.deps, { ...LAB, archiving: { archiveTimeoutSeconds: 60 }, replicationPeers: ['10.0.0.5', 'fd00::5'] });
    expect(lab.confText).toContain(`archive_command = 'pgbackrest --config=${host.dir}/pgbackrest/pgbackrest.conf --stanza=storage-lab archive-push %p'`);
    expect(lab.confText).toMatch(/^archive_mode = 'on'$/m);
    expect(lab.confText).toMatch(/^archive_timeout = '60s'$/m);
    expect(lab.confText).toMatch(/^work_mem = '8MB'$/m);
    expect(lab.confText).toMatch(/^temp_file_limit = '\d+kB'$/m);
    expect(lab.confText).toMatch(/^unix_socket_directories = '.+\/run'$/m);
    expect(lab.hbaText).toContain('host    replication  all          10.0.0.5/32  scram-sha-256');
    expect(lab.hbaText).toContain('host    all          all          fd00::5/128  scram-sha-256');
    // Without archiving asked for, no archive command at all, whatever was recorded.
    expect(labConfig(host.deps, LAB).confText).not.toMatch(/archive/);
  });
});

describe('text from a host file in a failure: bounded, and in one failure only', () => {
  it('is the final attempt only on the last of a bounded policy, and always when the policy is unbounded or unknown', async () => {
    const at = (attempt: number, maximumAttempts?: number) =>
      new MockActivityEnvironment({ attempt, ...(maximumAttempts === undefined ? {} : { retryPolicy: { maximumAttempts } }) }).run(async () => isFinalAttempt());
    expect([await at(1, 10), await at(9, 10), await at(10, 10), await at(1, 1), await at(3, 0), await at(2)]).toEqual([false, false, true, true, true, true]);
  });

  it('takes at most the lines asked, each cut at 300 characters, from the last 32 KiB of the log', () => {
    const host = fakeHost();
    try {
      const log = path.join(host.dir, 'postgres.log');
      writeFileSync(log, `${'early line\n'.repeat(10_000)}${'x'.repeat(1000)}\nlast\n`);
      const lines = tail(log, 15).split('\n');
      expect(lines).toHaveLength(15);
      expect(lines.at(-2)).toBe(`${'x'.repeat(300)}…`);
      expect(lines.at(-1)).toBe('last');
      expect(tail(path.join(host.dir, 'none.log'), 15)).toBe('(no log)');
    } finally {
      rmSync(host.dir, { recursive: true, force: true });
    }
  });
});

describe('pg_hba.conf and pg_ident.conf', () => {
  it('trusts no one: the socket by OS user through the map, TCP by password', () => {
    const hba = renderHba([]);
    expect(hba).not.toMatch(/trust/);
    expect(hba).toMatch(/^local\s+all\s+all\s+peer map=storage-lab$/m);
    expect(hba.split('\n').filter((l) => /^host/.test(l)).every((l) => /127\.0\.0\.1\/32\s+scram-sha-256$/.test(l))).toBe(true);
  });

  it('as root: root and postgres may be the lab, the client user only the workload', () => {
    expect(renderIdent(OS_USERS, 'root').split('\n').filter((l) => l.startsWith('storage-lab '))).toEqual([
      'storage-lab  root  lab',
      'storage-lab  postgres  lab',
      'storage-lab  storage-lab  lab_workload',
    ]);
  });

  it("without root: the agent's own user (which runs Postgres and the tools) may be either", () => {
    expect(renderIdent({ osUser: null, clientUser: null }, 'ci').split('\n').filter((l) => l.startsWith('storage-lab '))).toEqual([
      'storage-lab  ci  lab',
      'storage-lab  ci  lab_workload',
    ]);
  });
});

describe('the settings a host receives, by type', () => {
  it("accepts the lab's settings of every preset shape and refuses other names and shapes", () => {
    expect(labSettingProblems({ shared_buffers: '128MB', debug_io_direct: 'data, wal', log_line_prefix: '%m [%p] ', wal_retrieve_retry_interval: '200ms' })).toEqual([]);
    expect(labSettingProblems({ restore_command: 'x', max_connections: '10; x', log_timezone: "UTC'" }).map((p) => p.path)).toEqual([
      'server.restore_command',
      'server.max_connections',
      'server.log_timezone',
    ]);
  });

  it("names every problem of the spec's settings with its dotted path", () => {
    expect(serverSettingsProblems({ work_mem: '8MB', effective_cache_size: 4096, jit: false })).toEqual([]);
    expect(serverSettingsProblems({ archive_command: 'x', 'Work-Mem': '1', work_mem: { nested: 1 } }).map((p) => p.path)).toEqual([
      'postgres.settings.archive_command',
      'postgres.settings.Work-Mem',
      'postgres.settings.work_mem',
    ]);
  });

  it('sizes temp_file_limit so that every allowed session together fills at most a quarter of the volume', () => {
    const volume = 100 * 2 ** 30;
    const kb = tempFileLimitKb(volume, 84);
    expect(kb * 1024 * 84).toBeLessThanOrEqual(volume / 4);
    expect(kb * 1024 * 85).toBeGreaterThan(volume / 4);
    expect(tempFileLimitKb(2 ** 20, 1000)).toBe(1024);
  });

  it('builds synchronous_standby_names from node names', () => {
    expect(synchronousStandbyNames(['n2', 'n3'])).toBe('ANY 1 (n2, n3)');
    expect(synchronousStandbyNames([])).toBe('');
  });
});

describe("the host's re-checks of replication and scripts", () => {
  let host: ReturnType<typeof fakeHost>;
  beforeEach(() => (host = fakeHost()));
  afterEach(() => rmSync(host.dir, { recursive: true, force: true }));

  it.each<[string, Record<string, unknown>, string]>([
    ['a newline in the primary\'s host', { primary: { host: "127.0.0.1 passfile='/root/.pgpass'\n", port: 5432 } }, 'primary.host'],
    ['a port that is not one', { primary: { host: '127.0.0.1', port: 0 } }, 'primary.port'],
    ['a node name that ends the quorum list', { synchronousStandbys: ['n2) OR (x'] }, 'synchronousStandbys[0]'],
    ['a conninfo option in the node name', { node: 'n1 sslmode=disable' }, 'node: "n1 sslmode=disable" is not a node name'],
  ])('setReplication refuses %s before writing its file', async (_, change, fragment) => {
    const failure = await failureOf(() => setReplication(host.deps, { hostId: HOST_ID, primary: null, node: 'n1', synchronousStandbys: [], ...change }));
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(fragment);
    expect(readdirSync(path.join(host.dir, 'disk'))).toEqual([]);
  });

  it('cloneStandby refuses a peer that is not an address before it removes or copies anything', async () => {
    const failure = await failureOf(() => cloneStandby(host.deps, { hostId: HOST_ID, primary: { host: '-hevil.example', port: 5432 }, node: 'n2' }));
    expect(failure.message).toContain('primary.host');
    expect(existsSync(path.join(host.dir, 'pgpass'))).toBe(false);
  });

  it.each([
    ['runPgbench', () => runPgbench(host.deps, { hostId: HOST_ID, label: 'tps', scale: 1, clients: 1, threads: 1, durationSeconds: 1, script: '\\shell touch /tmp/marker\nSELECT 1;' })],
    ['runBacklogPhase', () => runBacklogPhase(host.deps, { hostId: HOST_ID, backlogMB: 1, scale: 1, clients: 1, threads: 1, script: 'SELECT 1 \\setshell x id' })],
  ])('%s refuses a \\shell script, naming workload.script, before writing it', async (_, run) => {
    const failure = await failureOf(run);
    expect(failure.type).toBe(FAILURE_TYPES.invalidSpec);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/workload\.script: line 1: \\(shell|setshell) is refused/);
    expect(readdirSync(host.dir).sort()).toEqual(['disk']);
  });

  it('lets the reference script through to the run (which then needs a server)', async () => {
    const outcome = await new MockActivityEnvironment()
      .run(() => runPgbench(host.deps, { hostId: HOST_ID, label: 'tps', scale: 1, clients: 1, threads: 1, durationSeconds: 1, script: RANDOM_UPDATE_SCRIPT }))
      .catch((e: Error) => e);
    // It got as far as connecting to the host's (absent) server.
    expect((outcome as Error).message).toMatch(/ENOENT|ECONNREFUSED/);
  });
});

describe("the backup tools' config files", () => {
  const pg = { dataDir: '/h/disk/pgdata', socketDir: '/h/run', port: 5433 };
  const dirs = { logDir: '/h/logs/pgbackrest', lockDir: '/h/pgbackrest/lock', spoolDir: '/h/pgbackrest/spool' };
  const s3 = { kind: 's3', bucket: 'lab', path: '/storage-lab/backups/run-1', region: 'us-east-1', endpoint: 'https://minio.local:9000' } as const;
  const injected = '\n[global]\nrepo1-type=posix\narchive-push-queue-max=1';

  it.each(['bucket', 'region', 'path', 'endpoint'] as const)('refuse a newline in the store\'s %s before anything is written', (field) => {
    const store: ResolvedBackupStore = { ...s3, [field]: `${s3[field]}${injected}` };
    expect(() => renderPgbackrestConfig({ stanza: 'storage-lab', store, pg, ...dirs })).toThrow(new RegExp(`pgBackRest config not written: store\\.${field} contains a control character`));
    expect(() => renderWalgConfig({ store, pg, compression: 'lz4' })).toThrow(
      new RegExp(`WAL-G config not written: store\\.${field} contains a control character`),
    );
  });

  it('refuse a folder store path with a line end, and keys with white space at an end', () => {
    expect(() => renderPgbackrestConfig({ stanza: 'storage-lab', store: { kind: 'folder', path: '/b/run\nrepo1-type=s3' }, pg, ...dirs })).toThrow(/store\.path contains a control character/);
    const keys = { accessKeyId: 'AKIA ', secretAccessKey: 'secret' };
    expect(() => renderPgbackrestConfig({ stanza: 'storage-lab', store: s3, pg, ...dirs, s3Credentials: keys })).toThrow(/repo1-s3-key begins or ends with white space/);
    expect(() => renderWalgConfig({ store: s3, pg, compression: 'lz4', s3Credentials: keys })).toThrow(/AWS_ACCESS_KEY_ID begins or ends with white space/);
  });

  it('take = [ and # inside a value as data (the key comes first on its line)', () => {
    expect(configValueProblem('/b/run=1[x]#y')).toBeNull();
    expect(configValueProblem('')).toBe('is empty');
  });

  it("write the agent's S3 keys into the file (the tools never see the agent's environment)", () => {
    const keys = { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 's3cr3t/+=', sessionToken: 'tok' };
    const ini = renderPgbackrestConfig({ stanza: 'storage-lab', store: s3, pg, ...dirs, s3Credentials: keys });
    expect(ini).toMatch(/^repo1-s3-key-type=shared$/m);
    expect(ini).toMatch(/^repo1-s3-key=AKIAEXAMPLE$/m);
    expect(ini).toMatch(/^repo1-s3-key-secret=s3cr3t\/\+=$/m);
    expect(ini).toMatch(/^repo1-s3-token=tok$/m);
    expect(renderPgbackrestConfig({ stanza: 'storage-lab', store: s3, pg, ...dirs })).toMatch(/^repo1-s3-key-type=auto$/m);
    expect(renderWalgConfig({ store: s3, pg, compression: 'lz4', s3Credentials: keys })).toMatchObject({
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 's3cr3t/+=',
      AWS_SESSION_TOKEN: 'tok',
    });
    expect(renderWalgConfig({ store: s3, pg, compression: 'lz4' })).not.toHaveProperty('AWS_SECRET_ACCESS_KEY');
  });
});
