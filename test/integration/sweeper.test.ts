/**
 * The sweeper on the real control worker: EC2 hosts on moto and local hosts (real agent processes), made by runs
 * that are running, terminated or unknown, some expired, one made by another lab. A dry run lists what would go;
 * the real sweep removes exactly that and never a host whose run is running and not expired.
 */
import type { Client } from '@temporalio/client';
import { existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { backupsDirFor } from '../../lib/lab-paths';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import type { HostRequest } from '../../common/core/hosts';
import type { HostProvider } from '../../infra/providers/host-provider';
import type { LocalProvider } from '../../infra/providers/local/local-provider';
import type { SweepReport } from '../../common/core/sweep';
import { awsSpec, hostRequests, localProviderFor, NVME_ONLY, startAwsTestbed, type AwsTestbed } from '../helpers/aws-lab';
import { startTestLab, type TestLab, hostDirOf } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';

describe('sweeperWorkflow', () => {
  let bed: AwsTestbed;
  let lab: TestLab;
  let client: Client;
  let local: LocalProvider;
  const runs: string[] = [];

  beforeAll(async () => {
    bed = await startAwsTestbed();
    lab = await startTestLab('sweep', { aws: () => bed.setup() });
    client = lab.client;
    local = localProviderFor(lab.paths);
  });
  afterAll(async () => {
    try {
      await lab?.close();
      if (bed) for (const runId of runs) expect(await bed.moto.leftovers(runId)).toEqual([]);
    } finally {
      await bed?.moto.stop();
    }
  });

  /** A run whose workflow stays running: nothing polls its task queue. */
  async function startIdleRun(): Promise<string> {
    const runId = uniqueId('sweep-run');
    runs.push(runId);
    await client.workflow.start('storageLabIdleTestWorkflow', { taskQueue: uniqueId('nobody-polls'), workflowId: runId });
    return runId;
  }

  /** One host of a run (an NVMe-only spec, so no volume), expiring at `expiresAt`. */
  function request(runId: string, expiresAt: string, className = 'nvme'): HostRequest {
    const spec = awsSpec(bed.network, className === 'nvme' ? NVME_ONLY : {});
    return hostRequests(spec, runId, expiresAt).find((r) => r.className === className)!;
  }

  const sweep = (dryRun: boolean) =>
    client.workflow.execute(WORKFLOW_TYPES.sweeper, {
      taskQueue: lab.taskQueue,
      workflowId: uniqueId('sweep'),
      args: [{ dryRun }],
    }) as Promise<SweepReport>;

  it('removes hosts of terminated, unknown and expired runs, and keeps live and foreign ones', async () => {
    const future = new Date(Date.now() + 3600_000).toISOString();
    const past = new Date(Date.now() - 60_000).toISOString();
    const live = await startIdleRun();
    const terminated = await startIdleRun();
    await client.workflow.getHandle(terminated).terminate('test: a run killed without compensation');
    const unknown = uniqueId('never-started');
    const foreignRun = uniqueId('other-lab-run');
    runs.push(unknown, foreignRun);

    const ec2 = bed.setup().provider;
    const foreignOwner = { address: 'elsewhere:7233', namespace: 'other' };
    const foreignLab = bed.setup({ owner: foreignOwner }).provider;
    // Another lab's hosts dial that lab's Temporal (its provider refuses any other address).
    const foreignRequest = (runId: string, expiresAt: string): HostRequest => {
      const req = request(runId, expiresAt);
      return { ...req, aws: { ...req.aws!, temporalAddress: foreignOwner.address, temporalNamespace: foreignOwner.namespace } };
    };
    const made: Record<string, { provider: HostProvider; req: HostRequest }> = {
      terminatedGp3: { provider: ec2, req: request(terminated, future, 'gp3') },
      unknown: { provider: ec2, req: request(unknown, future) },
      live: { provider: ec2, req: request(live, future) },
      liveExpired: { provider: ec2, req: { ...request(live, past), hostId: `${request(live, past).hostId}-x` } },
      foreign: { provider: foreignLab, req: foreignRequest(foreignRun, future) },
      localTerminated: { provider: local, req: { ...request(terminated, future), hostId: hostIdFor(terminated, 'local', 0) } },
      localLive: { provider: local, req: { ...request(live, future), hostId: hostIdFor(live, 'local', 0) } },
    };
    for (const m of Object.values(made)) await m.provider.provision(m.req);
    const id = (k: string) => made[k].req.hostId;
    const expectRemoved = ['terminatedGp3', 'unknown', 'liveExpired', 'localTerminated'].map(id).sort();

    const dry = await sweep(true);
    expect(dry.dryRun).toBe(true);
    expect(dry.removed.map((h) => h.hostId).sort()).toEqual(expectRemoved);
    expect(dry.kept.map((h) => h.hostId)).toEqual(expect.arrayContaining(['live', 'foreign', 'localLive'].map(id)));
    const reason = (r: SweepReport, k: string) => r.removed.find((h) => h.hostId === id(k))?.reason;
    expect(reason(dry, 'terminatedGp3')).toContain('has closed');
    expect(reason(dry, 'unknown')).toContain('unknown to this Temporal namespace');
    expect(reason(dry, 'liveExpired')).toContain('expired at');
    // A dry run removes nothing.
    expect(await bed.moto.leftovers(terminated)).toHaveLength(2); // The gp3 host's instance and volume.
    expect(existsSync(hostDirOf(lab.paths, id('localTerminated')))).toBe(true);

    const real = await sweep(false);
    expect(real.failed).toEqual([]);
    expect(real.removed.map((h) => h.hostId).sort()).toEqual(expectRemoved);
    expect(await bed.moto.leftovers(terminated)).toEqual([]);
    expect(await bed.moto.leftovers(unknown)).toEqual([]);
    expect(lab.leftovers([id('localTerminated')]).filter((l) => l.includes(id('localTerminated')) || l.includes(hostDirOf(lab.paths, id('localTerminated'))))).toEqual([]);
    // What stays, stays: the live run's unexpired hosts and the other lab's host.
    expect((await bed.moto.leftovers(live)).length).toBe(1);
    expect(await bed.moto.leftovers(foreignRun)).toHaveLength(1);
    expect(existsSync(hostDirOf(lab.paths, id('localLive')))).toBe(true);

    // Once the live run ends, its hosts go too; the other lab's host stays until it expires.
    await client.workflow.getHandle(live).terminate('test done');
    const after = await sweep(false);
    expect(after.removed.map((h) => h.hostId).sort()).toEqual(['live', 'localLive'].map(id).sort());
    expect(after.kept.map((h) => h.hostId)).toEqual([id('foreign')]);
    await foreignLab.teardown(id('foreign'));
    expect(lab.leftovers([id('localLive'), id('localTerminated')])).toEqual([]);
  });

  it('removes a host or store folder with no owner record only when no open run could have made it, and names it', async () => {
    // Folders the lab made (marker beside them) whose claim never got written: a provisioning that died at once.
    const backups = backupsDirFor(lab.paths.hostsDir);
    const made = (dir: string, minutesAgo: number) => {
      mkdirSync(dir, { recursive: true });
      const marker = path.join(path.dirname(dir), `.${path.basename(dir)}.storage-lab`);
      writeFileSync(marker, `${dir}\n`);
      const at = new Date(Date.now() - minutesAgo * 60_000);
      for (const p of [dir, marker]) utimesSync(p, at, at);
      return dir;
    };
    const oldHost = made(path.join(lab.paths.hostsDir, 'orphanhostaaaaaa'), 60);
    const youngHost = made(path.join(lab.paths.hostsDir, 'orphanhostbbbbbb'), 1);
    const oldStore = made(path.join(backups, 'orphan-store'), 60);
    // A run open now (started after the old folders were made, before the young one).
    await startIdleRun();
    const real = await sweep(false);
    const removed = Object.fromEntries(real.removed.map((h) => [h.resources[0], h.reason]));
    const kept = Object.fromEntries(real.kept.map((h) => [h.resources[0], h.reason]));
    expect(removed[oldHost]).toMatch(new RegExp(`^${oldHost} has no owner record \\(made .*\\): older than every open run \\(the oldest started .*\\), so no live run made it$`));
    expect(removed[oldStore]).toMatch(/has no owner record .* so no live run made it/);
    expect(kept[youngHost]).toMatch(/younger than 10 minutes, a run may still be claiming it/);
    expect(real.failed).toEqual([]);
    expect([existsSync(oldHost), existsSync(oldStore), existsSync(youngHost)]).toEqual([false, false, true]);
    rmSync(youngHost, { recursive: true });
    rmSync(path.join(lab.paths.hostsDir, '.orphanhostbbbbbb.storage-lab'));
  });
});
