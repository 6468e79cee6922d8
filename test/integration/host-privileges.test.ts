/**
 * Least privilege below the spec, on real PostgreSQL hosts (bench hosts in temporary folders, the host activities
 * called directly): who may reach the socket and as which role, what the tools inherit, what the host refuses on
 * its own, schema public and the lab's search path on PostgreSQL 15 and 17, and temp_file_limit on a small volume.
 * Run as root (the suite is): the OS users postgres, storage-lab and nobody are real.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Client } from 'pg';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toolProcesses } from '../../activities/host/leftovers';
import { loadData } from '../../activities/host/load';
import { runPgbench } from '../../activities/host/pgbench';
import { configurePostgres, serverLog } from '../../activities/host/postgres';
import { unmount } from '../../lib/block-devices';
import { startSampler } from '../../lib/sampler';
import { libpqEnv, withConnection } from '../../lib/pg';
import { ProcessError, runProcess } from '../../lib/process-runner';
import { FAILURE_TYPES } from '../../common/core/errors';
import { LAB_ROLE, WORKLOAD_ROLE } from '../../common/core/names';
import { tempFileLimitKb } from '../../common/input/postgres-settings';
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { clientTool, CLIENT_OS_USER, lookupUser, type OsUser } from '../../lib/postgres-binaries';
import type { HostConfig } from '../../common/core/hosts';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';

const SETTINGS = { shared_buffers: '32MB', max_connections: '40', wal_level: 'replica' };
const SECRETS = { PGPASSWORD: 'pg-secret', AWS_SECRET_ACCESS_KEY: 'aws-secret', TEMPORAL_API_KEY: 'temporal-secret' };
const root = process.getuid?.() === 0;
const rootOnly = root ? describe : describe.skip;

/** psql over the host's socket as `user` (an OS user) connecting as `role`; its output, or the error it printed. */
async function psql(config: HostConfig, user: OsUser, role: string, sql: string): Promise<{ ok: boolean; out: string }> {
  try {
    const r = await runProcess(clientTool(config, 'psql'), ['-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
      uid: user.uid,
      gid: user.gid,
      cwd: '/',
      env: { ...libpqEnv(config), PGUSER: role },
      timeoutMs: 60_000,
    });
    return { ok: true, out: r.stdout.trim() };
  } catch (err) {
    if (!(err instanceof ProcessError) || err.reason !== 'exit') throw err;
    return { ok: false, out: err.stderr.trim() };
  }
}

const osUser = (name: string): OsUser => {
  const user = lookupUser(name);
  if (!user) throw new Error(`no OS user ${name}: run infra/bootstrap.sh`);
  return user;
};

rootOnly('who reaches a host\'s Postgres, as which role, with what (integration)', () => {
  let host: BenchHost;
  let marker: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    // The worker's environment holds secrets; no tool may see them.
    Object.assign(process.env, SECRETS);
    host = await startBenchHost('privileges', SETTINGS);
    await host.run(loadData, { hostId: host.deps.config.hostId, scale: 1, chunkRows: 50_000, writers: 1 });
    // A folder anyone may write: a program run by any OS user would leave its marker here.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-marker-'));
    chmodSync(dir, 0o1777);
    marker = path.join(dir, 'marker');
  });
  afterAll(async () => {
    for (const k of Object.keys(SECRETS)) delete process.env[k];
    Object.assign(process.env, saved);
    await host?.close();
    if (marker) rmSync(path.dirname(marker), { recursive: true, force: true });
  });

  it('lets the client user be the workload role only, and keeps every other OS user out of the socket folder', async () => {
    const config = host.deps.config;
    const client = osUser(CLIENT_OS_USER);
    const folder = statSync(config.socketDir);
    expect(folder.mode & 0o777).toBe(0o750);
    expect(folder.gid).toBe(client.gid);
    expect(folder.uid).toBe(osUser('postgres').uid);

    const asLab = await psql(config, client, LAB_ROLE, 'SELECT 1');
    expect(asLab.ok).toBe(false);
    expect(asLab.out).toMatch(/Peer authentication failed for user "lab"/);
    const nobody = await psql(config, osUser('nobody'), LAB_ROLE, 'SELECT 1');
    expect(nobody.ok).toBe(false);
    expect(nobody.out).toMatch(/Permission denied/);
    const workload = await psql(config, client, WORKLOAD_ROLE, 'SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user');
    expect(workload).toEqual({ ok: true, out: `${WORKLOAD_ROLE}|f` });
    // The Postgres user is the lab (the backup tools, pg_amcheck and pg_recvlogical connect so).
    expect(await psql(config, osUser('postgres'), LAB_ROLE, 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).toEqual({ ok: true, out: 't' });
    // No superuser among the roles the workload may be.
    expect((await withConnection(config, (c) => c.query<{ s: boolean }>('SELECT rolsuper AS s FROM pg_roles WHERE rolname = $1', [WORKLOAD_ROLE]))).rows).toEqual([{ s: false }]);
  });

  it("runs pgbench with the host's libpq settings and none of the worker's secrets", async () => {
    const config = host.deps.config;
    const run = host.run(runPgbench, { hostId: config.hostId, label: 'env', scale: 1, clients: 2, threads: 1, durationSeconds: 3, script: RANDOM_UPDATE_SCRIPT });
    let environ: string[] | null = null;
    for (let i = 0; i < 100 && !environ; i++) {
      const pgbench = toolProcesses(config.socketDir).find((p) => p.name === 'pgbench');
      if (pgbench) environ = readFileSync(`/proc/${pgbench.pid}/environ`, 'utf8').split('\0').filter(Boolean);
      else await new Promise((r) => setTimeout(r, 50));
    }
    await run;
    expect(environ).not.toBeNull();
    const names = environ!.map((e) => e.slice(0, e.indexOf('=')));
    for (const secret of Object.keys(SECRETS)) expect(names).not.toContain(secret);
    expect(environ).toEqual(expect.arrayContaining([`PGHOST=${config.socketDir}`, `PGUSER=${WORKLOAD_ROLE}`, 'PGAPPNAME=storage-lab pgbench env']));
    expect(names.every((n) => /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|PG(HOST|PORT|USER|DATABASE|APPNAME))$/.test(n))).toBe(true);
  });

  it('refuses a program-running setting and a \\shell script on its own, non-retryable, and nothing runs', async () => {
    const { hostId } = host.deps.config;
    const failures = await Promise.all([
      new MockActivityEnvironment().run(() =>
        configurePostgres(host.deps, { hostId, ...hostSettings(SETTINGS), user: { archive_command: `touch ${marker}`, archive_mode: 'on' } }),
      ),
      new MockActivityEnvironment().run(() =>
        runPgbench(host.deps, { hostId, label: 'hostile', scale: 1, clients: 1, threads: 1, durationSeconds: 1, script: `\\shell touch ${marker}\nSELECT 1;` }),
      ),
    ].map((p) => p.then(() => null, (e: unknown) => e as ApplicationFailure)));
    expect(failures.map((f) => [f?.type, f?.nonRetryable])).toEqual([
      [FAILURE_TYPES.invalidSpec, true],
      [FAILURE_TYPES.invalidSpec, true],
    ]);
    expect(failures[0]!.message).toMatch(/postgres\.settings\.archive_command: refused/);
    expect(failures[1]!.message).toMatch(/workload\.script: line 1: \\shell is refused/);
    // The server still runs the lab's configuration: nothing archives, and no program left its marker.
    await new Promise((r) => setTimeout(r, 1000));
    expect(existsSync(marker)).toBe(false);
    const archive = await withConnection(host.deps.config, (c) => c.query<{ m: string }>("SELECT current_setting('archive_mode') AS m"));
    expect(archive.rows[0]).toEqual({ m: 'off' });
  });
  it("keeps a workload's warnings out of the server log, which a script could otherwise grow without bound", async () => {
    const config = host.deps.config;
    const probe = (who: string) => `DO $$ BEGIN RAISE WARNING 'storage-lab log probe from ${who}'; END $$`;
    expect((await psql(config, osUser(CLIENT_OS_USER), WORKLOAD_ROLE, probe('the workload'))).ok).toBe(true);
    // The lab's own warnings still reach the log: the log works, the workload's alone are left out.
    await withConnection(config, (c) => c.query(probe('the lab')));
    const log = readFileSync(serverLog(host.deps), 'utf8');
    expect(log).toContain('storage-lab log probe from the lab');
    expect(log).not.toContain('storage-lab log probe from the workload');
    // The workload cannot turn it back on: the setting is a superuser's.
    const reset = await psql(config, osUser(CLIENT_OS_USER), WORKLOAD_ROLE, 'SET log_min_messages = warning');
    expect(reset.ok).toBe(false);
    expect(reset.out).toMatch(/permission denied to set parameter "log_min_messages"/);
  });
});

describe.each([15, 17])('schema public and the lab\'s search path on PostgreSQL %i (integration)', (version) => {
  let host: BenchHost;
  beforeAll(async () => {
    host = await startBenchHost(`public-${version}`, SETTINGS, { version });
    await host.run(loadData, { hostId: host.deps.config.hostId, scale: 1, chunkRows: 50_000, writers: 1 });
  });
  afterAll(async () => {
    await host?.close();
  });

  /** SQL as the workload's role: psql as the client user where there is one (root), else as the agent's user. */
  const asWorkload = (sql: string) => psql(host.deps.config, host.deps.clientUser ?? osUser(os.userInfo().username), WORKLOAD_ROLE, sql);

  it('lets the workload create nothing in public, in any database the lab uses', async () => {
    const running = await withConnection(host.deps.config, async (c) => (await c.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0].v);
    expect(Math.floor(Number(running) / 10000)).toBe(version);
    const made = await asWorkload('CREATE FUNCTION public.planted() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
    expect(made.ok).toBe(false);
    expect(made.out).toMatch(/permission denied for schema public/);
    // As PostgreSQL 12-14 make every database: PUBLIC may create in public. Configuring the host takes it back.
    for (const database of ['template1', 'postgres', 'bench'])
      await withConnection(host.deps.config, (c) => c.query('GRANT CREATE ON SCHEMA public TO PUBLIC'), { database });
    await host.run(configurePostgres, { hostId: host.deps.config.hostId, ...hostSettings(SETTINGS) });
    for (const database of ['template1', 'postgres', 'bench']) {
      const acl = await withConnection(
        host.deps.config,
        (c) => c.query<{ create: boolean }>("SELECT has_schema_privilege('public', 'public', 'CREATE') AS create"),
        { database },
      );
      expect(acl.rows).toEqual([{ create: false }]);
    }
    // What the workload keeps: reads and writes of the pgbench tables.
    expect(await asWorkload('UPDATE public.pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1')).toEqual({ ok: true, out: 'UPDATE 1' });
  });

  it('never calls a function planted in public from the sampler, where a default search path would', async () => {
    const config = host.deps.config;
    // What PostgreSQL 12-14 allowed every role by default: create in public.
    await withConnection(config, (c) => c.query(`GRANT CREATE ON SCHEMA public TO ${WORKLOAD_ROLE}`));
    try {
      const planted = await asWorkload(
        [
          'CREATE TABLE public.planted_calls (at timestamptz DEFAULT now())',
          // The sampler's snapshot calls to_jsonb on a pg_stat_database row: an exact match beats pg_catalog's anyelement.
          "CREATE FUNCTION public.to_jsonb(pg_stat_database) RETURNS jsonb LANGUAGE sql AS $$ INSERT INTO public.planted_calls DEFAULT VALUES RETURNING '{}'::jsonb $$",
        ].join('; '),
      );
      expect(planted).toEqual({ ok: true, out: 'CREATE TABLE\nCREATE FUNCTION' });
      const calls = () => withConnection(config, async (c) => Number((await c.query<{ n: string }>('SELECT count(*) AS n FROM public.planted_calls')).rows[0].n));
      const sampler = await startSampler(config, { intervalMs: 50, applicationName: 'storage-lab pgbench planted' });
      await new Promise((r) => setTimeout(r, 300));
      const seen = await sampler.stop();
      expect(seen.samples).toBeGreaterThan(0);
      expect(await calls()).toBe(0);
      // The same query in a superuser session with the default search path runs the planted function.
      const plain = new Client({ host: config.socketDir, port: config.postgres.port, user: LAB_ROLE, database: 'bench' });
      await plain.connect();
      try {
        await plain.query('SELECT to_jsonb(d) FROM pg_stat_database d WHERE datname = current_database()');
      } finally {
        await plain.end();
      }
      expect(await calls()).toBe(1);
    } finally {
      await withConnection(config, (c) => c.query(`DROP FUNCTION IF EXISTS public.to_jsonb(pg_stat_database); DROP TABLE IF EXISTS public.planted_calls; REVOKE CREATE ON SCHEMA public FROM ${WORKLOAD_ROLE}`));
    }
  });
});

rootOnly('temp_file_limit on a host with a small volume (integration)', () => {
  const VOLUME_BYTES = 256 * 2 ** 20;
  let dir: string;
  let host: BenchHost | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-small-volume-'));
    await runProcess('mount', ['-t', 'tmpfs', '-o', `size=${VOLUME_BYTES},mode=0755`, 'tmpfs', dir]);
    host = await startBenchHost('small-volume', SETTINGS, { hostDir: dir });
  });
  afterAll(async () => {
    await host?.close();
    if (dir) {
      // PostgreSQL's processes may still hold files on the volume for a moment after its stop (with both cores busy,
      // a clean-clone run found the mount busy, and the rmdir of a mount point failed): wait for them, bounded.
      await unmount(dir, 30_000);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is a quarter of the volume shared by every connection; a workload sort beyond it fails, the lab\'s own does not', async () => {
    const config = host!.deps.config;
    const expected = tempFileLimitKb(VOLUME_BYTES, Number(SETTINGS.max_connections));
    expect(await psql(config, osUser(CLIENT_OS_USER), WORKLOAD_ROLE, 'SHOW temp_file_limit')).toEqual({ ok: true, out: `${expected}kB` });
    // About 30 MB of sorted rows with 64 kB of work_mem: the sort spills far past the limit.
    const sort = "SET work_mem = '64kB'; SELECT count(*) FROM (SELECT g, md5(g::text) FROM generate_series(1, 300000) g ORDER BY 2) s";
    const workload = await psql(config, osUser(CLIENT_OS_USER), WORKLOAD_ROLE, sort);
    expect(workload.ok).toBe(false);
    expect(workload.out).toMatch(new RegExp(`temporary file size exceeds temp_file_limit \\(${expected}kB\\)`));
    const lab = await withConnection(config, async (c) => {
      await c.query("SET work_mem = '64kB'");
      return (await c.query<{ count: string }>(sort.split('; ')[1])).rows[0].count;
    });
    expect(lab).toBe('300000');
    // And the workload may not lift it.
    const lift = await psql(config, osUser(CLIENT_OS_USER), WORKLOAD_ROLE, 'SET temp_file_limit = -1');
    expect(lift.out).toMatch(/permission denied to set parameter "temp_file_limit"/);
  });
});
