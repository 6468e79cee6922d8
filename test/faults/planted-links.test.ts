/**
 * Root never reads through a link (issue 27). The host agent and the control worker run as root and read files in
 * folders other OS users write: the server's logs (the postgres user's), PGDATA's postmaster.pid, settings
 * fingerprint and postgresql.conf (the postgres user's, deep in its tree), pgbench's transaction logs (the client
 * user's). A link planted there, as that user, to a root-only file holding a secret must be refused, named, never
 * followed: the secret appears in no failure, result or history.
 * - end to end: the case. A link planted as postgres in place of the server's log right after the host is
 *   provisioned: configurePostgres fails (pg_ctl cannot write through it), its failure says the log was not read,
 *   and once the link is gone the run completes with its figures; the secret is in none of the run's histories;
 * - every other reader, as the agent and the provider call it, on a host folder laid out as the provider makes it,
 *   with each file replaced by a link planted by the user who owns its folder.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readTransactionLogs } from '../../activities/host/pgbench';
import { readRecoveryLog } from '../../activities/host/backup';
import type { HostDeps } from '../../activities/host/deps';
import { serverLog, tail, writeLabConfig } from '../../activities/host/postgres';
import { setReplication } from '../../activities/host/replication';
import type { HostConfig } from '../../common/core/hosts';
import { hostFolderName } from '../../common/core/ids';
import { LocalProvider } from '../../infra/providers/local/local-provider';
import { claimFile } from '../../lib/claims';
import { LabPathError, makeLabDir, registerLabRoot } from '../../lib/lab-fs';
import { clientOsUser, postgresOsUser, type OsUser } from '../../lib/postgres-binaries';
import { postgresProcesses, postmasterPid } from '../../lib/postgres-probe';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { pendingActivities } from '../helpers/faults';
import { hostDirOf, startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';

const postgres = postgresOsUser();
const client = clientOsUser();
if (!postgres || !client) throw new Error('the planted-link tests run as root with the postgres and storage-lab OS users (infra/bootstrap.sh)');

/** A root-only file (0600) with a secret in it: where every planted link leads. */
function secretFile(dir: string): { file: string; secret: string } {
  const secret = `ROOT-ONLY-${randomBytes(12).toString('hex')}`;
  const file = path.join(dir, `secret-${secret}`);
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return { file, secret: secret };
}

/** Plants a link as `user` (as that user could: in a folder of theirs). */
function plantAs(user: OsUser, target: string, link: string): void {
  execFileSync('ln', ['-sfn', target, link], { uid: user.uid, gid: user.gid });
}

/** A workflow's history with every payload decoded, to search for a secret. */
async function historyText(c: Client, workflowId: string): Promise<string> {
  const raw = JSON.stringify(await c.workflow.getHandle(workflowId).fetchHistory());
  return `${raw}\n${[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1], 'base64').toString('utf8')).join('\n')}`;
}

const SPEC = {
  preset: 'ci',
  storageClasses: { gp3: null },
  compare: null,
  data: { scale: 5, chunkRows: 50_000 },
  workload: { warmupSeconds: 0, durationSeconds: 3 },
  phases: { vacuum: { enabled: false }, backlog: { enabled: false } },
};

describe('root never reads through a link (faults)', () => {
  describe('end to end: the server log replaced by a link as postgres', () => {
    let lab: TestLab;
    const planted = new Map<string, string>();
    let secret: { file: string; secret: string };
    beforeAll(async () => {
      secret = secretFile(mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'secrets-')));
      lab = await startTestLab('links', {
        // Right after a host of this test's run is provisioned (before anything runs on it): the link, as postgres.
        interceptors: {
          activity: [
            () => ({
              inbound: {
                async execute(input, next) {
                  const result = (await next(input)) as { hostId?: string };
                  const info = Context.current().info;
                  if (info.activityType === 'provisionHost' && result?.hostId && planted.has('pending')) {
                    const log = path.join(hostDirOf(lab.paths, result.hostId), 'logs', 'postgres.log');
                    plantAs(postgres!, secret.file, log);
                    planted.set(result.hostId, log);
                    planted.delete('pending');
                  }
                  return result;
                },
              },
            }),
          ],
        },
      });
    });
    afterAll(async () => {
      await lab?.close();
    });

    it('refuses to read the log through it, names it in the failure, never the secret; the run completes once it is gone', async () => {
      planted.set('pending', '');
      const runId = uniqueId('links');
      const handle = await lab.startExperiment(SPEC, runId);
      const cluster = clusterWorkflowId(runId, 'local-disk', 0);
      // configurePostgres fails while the link is there; after its second failure the link goes (as a fixed host would).
      let removedAt = 0;
      for (let i = 0; i < 1200 && !removedAt; i++) {
        const pending = (await pendingActivities(lab.client, cluster).catch(() => [])).find((a) => a.type === 'configurePostgres');
        if (pending && pending.attempt >= 3) {
          const [, log] = [...planted.entries()].find(([k]) => k !== 'pending')!;
          rmSync(log);
          removedAt = pending.attempt;
        } else await new Promise((r) => setTimeout(r, 100));
      }
      expect(removedAt).toBeGreaterThanOrEqual(3);
      const summary = (await handle.result()) as { status: string; medianTps: Record<string, number | null> };
      expect(summary.status).toBe('completed');
      expect(summary.medianTps['local-disk']).toBeGreaterThan(0);

      // The attempts' failures, as the history keeps them: the last before success rides on the start event.
      const events = (await lab.client.workflow.getHandle(cluster).fetchHistory()).events ?? [];
      const typeOf = new Map(events.map((e) => [Number(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name]));
      const started = events
        .map((e) => e.activityTaskStartedEventAttributes)
        .filter((a) => a && typeOf.get(Number(a.scheduledEventId)) === 'configurePostgres' && a.attempt! >= 2);
      expect(started.length).toBe(1);
      const lastFailure = started[0]!.lastFailure?.message ?? '';
      expect(lastFailure).toMatch(/postgres\.log \(last lines\) ---\n\(not read: refused to read .*postgres\.log: .*is a symbolic link/);
      // The secret file's content is in no history of the run (experiment and cluster), payloads decoded.
      for (const id of [runId, cluster]) expect([id, (await historyText(lab.client, id)).includes(secret.secret)]).toEqual([id, false]);
      // Once in the history: the failure of the attempt before the last, on the last one's start event (no retry repeats it).
      const clusterHistory = JSON.stringify(await lab.client.workflow.getHandle(cluster).fetchHistory());
      expect(clusterHistory.split('(not read: refused to read').length - 1).toBe(1);
      // The failure names the path it refused, not where the link led: not even the secret file's name.
      expect(lastFailure).not.toContain(path.basename(secret.file));
      expect(lab.leftovers([])).toEqual([]);
    });
  });

  describe('every other file the agent and the provider read as root', () => {
    let base: string;
    let hostsDir: string;
    let hostDir: string;
    let secret: { file: string; secret: string };
    let deps: HostDeps;
    const hostId = 'abcdefghijklmnopqrstuvwxyz-node-1';
    const owner = { workflowId: 'links-run', execution: 'e1' };

    beforeAll(() => {
      base = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'links-host-'));
      chmodSync(base, 0o755);
      secret = secretFile(base);
      hostsDir = path.join(base, 'hosts');
      registerLabRoot(hostsDir);
      // A host folder as the local provider makes it: root's, with the postgres user's logs and data, the client
      // user's pgbench folder.
      hostDir = makeLabDir(path.join(hostsDir, hostFolderName(hostId)), { marker: true });
      claimFile(path.join(hostDir, 'owner.json'), { kind: 'host', resource: hostId, runId: 'links-run', ...owner, className: 'node', index: 1, claimedAt: new Date().toISOString() });
      for (const d of ['logs', 'disk']) {
        mkdirSync(path.join(hostDir, d));
        chownSync(path.join(hostDir, d), postgres!.uid, postgres!.gid);
      }
      execFileSync('mkdir', ['-p', path.join(hostDir, 'disk', 'pgdata')], { uid: postgres!.uid, gid: postgres!.gid });
      mkdirSync(path.join(hostDir, 'pgbench', 'run-1'), { recursive: true });
      chownSync(path.join(hostDir, 'pgbench', 'run-1'), client!.uid, client!.gid);
      const config: HostConfig = {
        hostId,
        runId: 'links-run',
        provider: 'local',
        className: 'node',
        kind: 'local-disk',
        taskQueue: `host:${hostId}`,
        emulated: false,
        limits: { iops: null, throughputMiBps: null, memoryLimitMiB: null },
        postgres: { host: '127.0.0.1', port: 1 },
        hostDir,
        dataDir: path.join(hostDir, 'disk', 'pgdata'),
        socketDir: path.join(hostDir, 'run'),
        device: null,
        osUser: postgres!.name,
        passwordFile: path.join(hostDir, 'secrets', 'db-password'),
        pgBinDir: '/nonexistent',
        cgroup: null,
      };
      writeFileSync(path.join(hostDir, 'host.json'), JSON.stringify(config));
      deps = { config, osUser: postgres, clientUser: client, ioCap: {} as HostDeps['ioCap'] };
      // Every file, planted as the user who owns its folder.
      const data = config.dataDir;
      plantAs(postgres!, secret.file, serverLog(deps));
      plantAs(postgres!, secret.file, path.join(hostDir, 'logs', 'recovery.log'));
      plantAs(postgres!, secret.file, path.join(data, 'postmaster.pid'));
      plantAs(postgres!, secret.file, path.join(data, 'storage-lab.conf.applied'));
      plantAs(postgres!, secret.file, path.join(data, 'postgresql.conf'));
      plantAs(client!, secret.file, path.join(hostDir, 'pgbench', 'run-1', 'tx.1'));
    });
    afterAll(() => {
      rmSync(base, { recursive: true, force: true });
    });

    /** What a call threw (or returned), as text: it must never hold the secret. */
    async function said(call: () => unknown): Promise<string> {
      try {
        return JSON.stringify(await call());
      } catch (err) {
        expect(err).toBeInstanceOf(LabPathError);
        return String(err);
      }
    }

    it('refuses each one, naming the link, and never reads the secret behind it', async () => {
      const outcomes: Record<string, string> = {
        'server log (failure tail)': await said(() => tail(serverLog(deps), 15)),
        'recovery log': await said(() => readRecoveryLog(path.join(hostDir, 'logs', 'recovery.log'))),
        'postmaster.pid (watchdog)': await said(() => ({ pid: postmasterPid(deps.config.dataDir), processes: postgresProcesses(deps.config.dataDir) })),
        'settings fingerprint': await said(() => writeLabConfig(deps, { confText: 'a = 1\n', hbaText: '', identText: '' })),
        'postgresql.conf (replication)': await said(() => setReplication(deps, { hostId, primary: null, node: 'n1', synchronousStandbys: [] })),
        'pgbench transaction log': await said(() => readTransactionLogs(path.join(hostDir, 'pgbench', 'run-1'))),
      };
      for (const [what, text] of Object.entries(outcomes)) expect([what, text.includes(secret.secret)]).toEqual([what, false]);
      expect(outcomes['server log (failure tail)']).toMatch(/^"\(not read: refused to read .*logs\/postgres\.log: .*is a symbolic link/);
      expect(outcomes['recovery log']).toMatch(/refused to read .*recovery\.log: .*is a symbolic link/);
      expect(outcomes['postmaster.pid (watchdog)']).toBe('{"pid":null,"processes":null}');
      expect(outcomes['settings fingerprint']).toMatch(/refused to read .*storage-lab\.conf\.applied: .*is a symbolic link/);
      expect(outcomes['postgresql.conf (replication)']).toMatch(/refused to read .*postgresql\.conf: .*is a symbolic link/);
      expect(outcomes['pgbench transaction log']).toMatch(/refused to read .*tx\.1: .*is a symbolic link/);
      // Nothing was written through a link either: the secret file is as it was.
      expect(execFileSync('cat', [secret.file]).toString()).toBe(`${secret.secret}\n`);
    });

    it("the provider's diagnose and kill (the control worker, as root) read postmaster.pid through the guard too", async () => {
      const provider = new LocalProvider({ hostsDir, agentEnv: {}, supervisorScript: '' });
      const diagnosis = await provider.inspect(hostId, { owner });
      expect(diagnosis.text).toMatch(/postgres not running/);
      expect(diagnosis.text).not.toContain(secret.secret);
      // A pid file the postgres user wrote naming a process of root's: root never kills it (it is not the postmaster).
      const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        rmSync(path.join(deps.config.dataDir, 'postmaster.pid'));
        execFileSync('sh', ['-c', `echo ${bystander.pid} > ${path.join(deps.config.dataDir, 'postmaster.pid')}`], { uid: postgres!.uid, gid: postgres!.gid });
        await provider.kill(hostId, { owner });
        await new Promise((r) => setTimeout(r, 200));
        expect([bystander.exitCode, bystander.signalCode]).toEqual([null, null]);
      } finally {
        bystander.kill('SIGKILL');
      }
      // Another run may neither kill the host nor read what runs there.
      await expect(provider.kill(hostId, { owner: { workflowId: 'other-run', execution: 'e9' } })).rejects.toMatchObject({ type: 'OwnedByAnotherRunError' });
      expect((await provider.inspect(hostId, { owner: { workflowId: 'other-run', execution: 'e9' } })).text).toMatch(/not described: host .* belongs to workflow "links-run" \(execution e1\)/);
    });
  });
});
