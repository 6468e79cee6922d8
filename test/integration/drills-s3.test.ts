/**
 * Both drills with WAL-G on moto's S3 (plain HTTP on 127.0.0.1, which WAL-G accepts and pgBackRest does not): the
 * restore drill from a delta backup on top of a full one, to an LSN between two marker rows; the failover drill with
 * its archive in S3, checked by wal-verify across the new timeline. Real control worker, host agents and Postgres;
 * the two drills run at once (they share nothing but the bucket). The agents of hosts whose backups go to S3 get
 * moto's keys from the control worker's environment and write them into WAL-G's config (0600, the postgres user's);
 * neither WAL-G nor the server's archive_command inherits them.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../lib/results-store';
import type { DrillResult, FailoverDrillResult, RestoreDrillResult } from '../../common/results/drill-result';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { startTestLab, type TestLab } from '../helpers/lab';
import { startMoto, type Moto } from '../helpers/moto';
import { uniqueId } from '../helpers/temporal';

const BUCKET = 'lab-drills';

describe('durability drills with WAL-G on S3 (integration)', () => {
  let moto: Moto;
  let lab: TestLab;
  beforeAll(async () => {
    moto = await startMoto();
    await moto.createBucket(BUCKET);
    // moto accepts any keys; the host agents of S3-backed drills get them and write them into WAL-G's config.
    process.env.AWS_ACCESS_KEY_ID = 'testing';
    process.env.AWS_SECRET_ACCESS_KEY = 'testing';
    lab = await startTestLab('drills-s3');
  });
  afterAll(async () => {
    await lab?.close();
    await moto?.stop();
  });

  async function drill<R extends DrillResult>(type: string, input: Record<string, unknown>) {
    const workflowId = uniqueId(type);
    const handle = await lab.client.workflow.start(type, { taskQueue: lab.taskQueue, workflowId, args: [input] });
    const outcome = await handle.result().then(
      (v) => v as unknown,
      (e) => e as unknown,
    );
    const result = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(workflowId), 'result.json'), 'utf8')) as R;
    return { workflowId, outcome, result };
  }

  /** Object names under a run's prefix in the bucket. */
  async function objectsOf(workflowId: string): Promise<string[]> {
    const out = await moto.clients.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `storage-lab/backups/${runFolderName(workflowId)}/` }));
    return (out.Contents ?? []).map((o) => o.Key!);
  }

  it('restores from a delta backup to an LSN, and fails over with its archive checked, both on S3', async () => {
    const store = { kind: 's3', bucket: BUCKET, endpoint: moto.endpoint, region: 'us-east-1' };
    const [restore, failover] = await Promise.all([
      drill<RestoreDrillResult>(WORKFLOW_TYPES.restoreDrill, { preset: 'ci', target: 'lsn', backup: { store, kind: 'delta' } }),
      drill<FailoverDrillResult>(WORKFLOW_TYPES.failoverDrill, { preset: 'ci', backup: { store } }),
    ]);

    const r = restore.result;
    expect(r.verdict).toMatch(/^passed/);
    expect(r.backupStore).toBe(`s3://${BUCKET}/storage-lab/backups/${runFolderName(restore.workflowId)}`);
    expect(r.backupTool).toEqual({ name: 'wal-g', version: '3.0.8' });
    // The restore fetched the delta, taken on top of the full backup, and stopped exactly at the target.
    expect(r.fullBackup).toMatchObject({ tool: 'wal-g', type: 'full' });
    expect(r.backup).toMatchObject({ tool: 'wal-g', type: 'delta', label: `base_${r.backup!.walStart}_D_${r.fullBackup!.walStart}` });
    expect(r.backup!.repositoryBytes).toBeLessThan(r.fullBackup!.repositoryBytes);
    expect(r.recovery!.detail).toMatch(/recovery stopping after WAL location \(LSN\)/);
    expect(r.verification.ledger).toMatchObject({ ok: true, maxPresentId: r.target!.lastIdBefore, idsAfterTarget: 0 });
    for (const t of Object.values(r.verification.checksums!.tables)) expect(t.restored).toEqual(t.expected);
    expect(r.verification.backupVerify).toMatchObject({ ok: true, tool: 'wal-g', missingWal: [] });
    const objects = await objectsOf(restore.workflowId);
    expect(objects.filter((k) => k.includes('/basebackups_005/') && k.endsWith('_backup_stop_sentinel.json'))).toHaveLength(2);
    expect(objects.some((k) => /\/wal_005\/[0-9A-F]{24}\.lz4$/.test(k))).toBe(true);
    expect(lab.leftovers([hostIdFor(restore.workflowId, 'source', 0), hostIdFor(restore.workflowId, 'restore', 0)])).toEqual([]);

    const f = failover.result;
    expect(f.verdict).toMatch(/^passed/);
    expect(f.rounds).toHaveLength(1);
    expect(f.rounds[0]).toMatchObject({ ok: true, lostCommits: 0 });
    expect(f.rounds[0].archivedOnNewTimeline).toMatch(/^00000002[0-9A-F]{16}$/);
    const archive = f.archive!;
    expect(archive.backupStore).toBe(`s3://${BUCKET}/storage-lab/backups/${runFolderName(failover.workflowId)}`);
    expect(archive.timeline).toBe(2);
    expect(archive.check).toMatchObject({ ok: true, tool: 'wal-g', missingWal: [] });
    expect(archive.check!.detail).toMatch(/timeline 2, highest in storage 2$/);
    // The new primary's timeline history reached the store with its segments.
    expect((await objectsOf(failover.workflowId)).some((k) => k.endsWith('/wal_005/00000002.history.lz4'))).toBe(true);
    const hosts = [hostIdFor(failover.workflowId, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(failover.workflowId, 'node', i))];
    expect(lab.leftovers(hosts)).toEqual([]);
  });
});
