/**
 * The restore drill: point-in-time restore from a backup store onto a fresh host, verified and timed.
 * Source host: pgbench data, WAL archived, a base backup, then writes with ledger marker rows before and after a
 * recovery target (a time or LSN between two markers, or the end of the archive), the archive lag at the failure
 * point, and the source killed. Restore host: fetch the backup, replay to the target, promote; verify the markers
 * (every one up to the target, none after), the tables' checksums at the target, pg_amcheck, the archive's
 * continuity and the repository check. Then, whatever happened, results are saved and every host is torn down.
 * One object argument with defaults, so the UI, the CLI and schedules start it alike: {"preset":"ci"}.
 */
import type { RecoveryTarget } from '../lib/backup-tool';
import { backupStoreLocation, type ResolvedBackupStore } from '../common/input/backup-store';
import { drillResultHead, repositoryVerification, type DrillSummary, type FailurePoint, type RestoreDrillResult } from '../common/results/drill-result';
import { drillLabSettings, resolveRestoreDrill, type DrillInput } from '../common/input/drill-spec';
import { userPostgresSettings } from '../common/input/postgres-settings';
import { hostIdFor } from '../common/core/ids';
import { lastArchivedSegment, parseSegmentName, segmentOfLsn } from '../common/core/lsn';
import { accountRows } from '../common/input/spec';
import { restoreDrillBounds } from '../common/input/bounds';
import { runCompensated } from './compensation';
import { checkedWorkflowId } from './doors';
import { drillHostRequest, finishDrill, provisionAndWait, teardownAll } from './drill-hosts';
import { failureMessage } from './failures';
import { ProgressBoard } from './progress';
import { hostCalls, preflightCalls, providerCalls, resultCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

/** The drill's steps in order, for its progress percentage. */
const STEPS = [
  'backup store',
  'provision source',
  'configure source',
  'load',
  'base backup',
  'delta backup',
  'writes before target',
  'target',
  'writes after target',
  'failure',
  'provision restore host',
  'fetch',
  'replay and promote',
  'verify',
  'save results',
  'teardown',
] as const;
type Step = (typeof STEPS)[number];

export async function restoreDrillWorkflow(input: DrillInput = {}): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  const spec = acceptInput(resolveRestoreDrill, input, drillSearchAttributes);
  // Settings by the real server, sizes against this environment: before any host exists.
  await preflightOrFail(preflightCalls.preflightDrill({ kind: 'restore', spec }));
  const board = new ProgressBoard(`Restore drill ${runId}`, runId);
  const provider = spec.provider;
  const source = hostIdFor(runId, 'source', 0);
  const restore = hostIdFor(runId, 'restore', 0);
  const timeouts = restoreDrillBounds(spec);
  const src = hostCalls(source, timeouts);
  const dst = hostCalls(restore, timeouts);
  // The lab's settings and the spec's travel apart; the host checks each and writes archive_command itself.
  const settings = { server: drillLabSettings(spec), user: userPostgresSettings(spec.postgres.settings) };
  const volumeBytes = accountRows(spec.data.scale) * 146 * 1.15 + 2 * 2 ** 30;
  const result: RestoreDrillResult = {
    ...drillResultHead('restore-drill', runId, spec),
    hosts: { source, restore },
    backupStore: null,
    backupTool: null,
    backup: null,
    fullBackup: null,
    target: null,
    failurePoint: null,
    injectedMissingSegment: null,
    rto: null,
    rpo: null,
    recovery: null,
    verification: {},
    errors: [],
  };
  const provisioned: string[] = [];
  /** Enters a step: the run's phase, the host it runs on, and the drill's percentage. */
  const step = (name: Step) => {
    board.step(STEPS.indexOf(name) < STEPS.indexOf('provision restore host') ? source : restore, name);
    board.setPercent((100 * STEPS.indexOf(name)) / STEPS.length);
  };

  const { tool, compression, archiveTimeoutSeconds } = spec.backup;

  /** Source host: archiving to the store, the data, a full base backup (and with kind "delta", writes and a delta). */
  async function setUpSource(store: ResolvedBackupStore): Promise<void> {
    step('provision source');
    provisioned.push(source);
    await provisionAndWait(provider, drillHostRequest(spec, runId, source, 'source', volumeBytes), timeouts);
    step('configure source');
    const archiving = await src.setup.configureBackups({ hostId: source, store, tool, compression });
    result.backupTool = { name: archiving.tool, version: archiving.version };
    result.postgresVersion = (await src.setup.configurePostgres({ hostId: source, ...settings, archiving: { archiveTimeoutSeconds } })).postgresVersion;
    await src.setup.initBackupRepository({ hostId: source, store, tool });
    step('load');
    const { scale, chunkRows, loadWriters } = spec.data;
    await src.load.loadData({ hostId: source, scale, chunkRows, writers: loadWriters });
    step('base backup');
    result.backup = await src.setup.takeBackup.executeWithOptions({ summary: `full base backup of ${source} to ${result.backupStore} with ${tool}` }, [
      { hostId: source, store, tool, kind: 'full' },
    ]);
    if (spec.backup.kind !== 'delta') return;
    step('delta backup');
    const { clients, markerIntervalMs, beforeSeconds } = spec.workload;
    // Changes for the delta to hold: markers here are before the target too, so the ledger check covers them.
    await src.measure.writeHistory({ hostId: source, label: 'writes before the delta backup', seconds: beforeSeconds, clients, markerIntervalMs });
    result.fullBackup = result.backup;
    result.backup = await src.setup.takeBackup.executeWithOptions({ summary: `delta backup of ${source} with ${tool}, on top of ${result.fullBackup.label}` }, [
      { hostId: source, store, tool, kind: 'delta' },
    ]);
  }

  /** Writes with marker rows before and after the target; the failure point's archive lag is the achieved RPO. */
  async function writeAroundTarget() {
    const { clients, markerIntervalMs, beforeSeconds, afterSeconds } = spec.workload;
    step('writes before target');
    await src.measure.writeHistory({ hostId: source, label: 'writes before target', seconds: beforeSeconds, clients, markerIntervalMs });
    step('target');
    const marked = await src.measure.markTarget({ hostId: source, type: spec.target, tables: spec.checksumTables });
    result.target = marked.target;
    step('writes after target');
    const after = await src.measure.writeHistory({ hostId: source, label: 'writes after target', seconds: afterSeconds, clients, markerIntervalMs, failurePoint: true });
    const failurePoint = after.failurePoint!;
    result.failurePoint = failurePoint;
    result.rpo = { seconds: failurePoint.archiveLagSeconds, bytes: failurePoint.archiveLagBytes, lostMarkers: null, lostWindowSeconds: null };
    step('failure');
    // A target inside the archive is the drill's premise: archive_timeout closes its segment within seconds.
    if (spec.target !== 'latest')
      await src.measure.waitForArchive({ hostId: source, lsn: marked.walLsn, timeoutSeconds: 3 * archiveTimeoutSeconds + 60 });
    await providerCalls.killHost.executeWithOptions({ summary: `kill -9 everything on ${source}: the failure` }, [{ provider, hostId: source }]);
    return { marked, failurePoint };
  }

  /** The last WAL segment the restore needs: the target's, or the newest archived one for "latest". */
  function lastNeededSegment(marked: { walLsn: string }, failurePoint: FailurePoint): string {
    const backup = result.backup!;
    if (spec.target !== 'latest') return segmentOfLsn(marked.walLsn, parseSegmentName(backup.walStop)?.timeline ?? 1);
    return lastArchivedSegment(failurePoint.lastArchivedWal) ?? backup.walStop;
  }

  /** A fresh host fetches the backup, replays to the target and promotes: the RTO split. */
  async function restoreOnFreshHost(store: ResolvedBackupStore, marked: Awaited<ReturnType<typeof writeAroundTarget>>['marked'], lastNeeded: string) {
    step('provision restore host');
    provisioned.push(restore);
    await provisionAndWait(provider, drillHostRequest(spec, runId, restore, 'restore', volumeBytes), timeouts);
    await dst.setup.configureBackups({ hostId: restore, store, tool, compression });
    if (spec.inject.missingWalSegment)
      result.injectedMissingSegment = await dst.measure.removeArchivedSegment({ hostId: restore, store, tool, after: result.backup!.walStop, upTo: lastNeeded });
    step('fetch');
    const target: RecoveryTarget =
      spec.target === 'time' ? { type: 'time', time: marked.target.time! } : spec.target === 'lsn' ? { type: 'lsn', lsn: marked.target.lsn! } : { type: 'latest' };
    const fetched = await dst.phase.restoreBackup.executeWithOptions({ summary: `fetch backup ${result.backup!.label} onto ${restore} with ${tool}, target ${spec.target}` }, [
      { hostId: restore, store, tool, target },
    ]);
    step('replay and promote');
    const recovery = await dst.measure.recoverFromBackup.executeWithOptions(
      { summary: `replay WAL to the target and promote, at most ${spec.restoreTimeoutSeconds} s` },
      [{ hostId: restore, ...settings, timeoutSeconds: spec.restoreTimeoutSeconds }],
    );
    result.recovery = { ok: recovery.ok, detail: recovery.detail, stoppedAt: recovery.stoppedAt, lastTransactionAt: recovery.lastTransactionAt };
    if (recovery.ok && recovery.replaySeconds !== null && recovery.promoteSeconds !== null)
      result.rto = {
        fetchSeconds: fetched.fetchSeconds,
        replaySeconds: recovery.replaySeconds,
        promoteSeconds: recovery.promoteSeconds,
        totalSeconds: fetched.fetchSeconds + recovery.replaySeconds + recovery.promoteSeconds,
      };
  }

  /** Archive continuity, the repository check, then (after a recovery) markers, checksums and pg_amcheck. */
  async function verify(store: ResolvedBackupStore, marked: Awaited<ReturnType<typeof writeAroundTarget>>['marked'], failurePoint: FailurePoint, lastNeeded: string) {
    step('verify');
    const archive = await dst.measure.checkArchive({ hostId: restore, store, tool, from: result.backup!.walStart, to: lastNeeded });
    const c = archive.continuity;
    result.verification.archiveContinuity = {
      ...c,
      detail: c.ok ? `${c.checked} segments ${c.from}..${c.to}, none missing` : `missing from the archive: ${c.missing.join(', ')} (needed between ${c.from} and ${c.to})`,
    };
    result.verification.backupVerify = repositoryVerification(tool, archive.repository);
    if (!result.recovery?.ok) return;
    const latest = spec.target === 'latest';
    const checked = await dst.measure.verifyRestore({
      hostId: restore,
      expectedThroughId: latest ? failurePoint.lastArchivedMarkerId : marked.target.lastIdBefore,
      exact: !latest,
      tables: spec.checksumTables,
      expectedChecksums: marked.target.checksums,
    });
    result.verification.ledger = checked.ledger;
    result.verification.checksums = checked.checksums;
    result.verification.amcheck = checked.amcheck;
    if (latest)
      result.rpo = {
        ...result.rpo!,
        lostMarkers: failurePoint.lastMarkerId - checked.ledger.maxPresentId,
        lostWindowSeconds: checked.maxPresentCommittedAt ? Math.max(0, (Date.parse(failurePoint.at) - Date.parse(checked.maxPresentCommittedAt)) / 1000) : null,
      };
  }

  const outcome = await runCompensated(
    board,
    async () => {
      step('backup store');
      const store = await providerCalls.prepareBackupStore({ runId, store: spec.backup.store, keep: spec.backup.keep });
      result.backupStore = backupStoreLocation(store);
      await setUpSource(store);
      const { marked, failurePoint } = await writeAroundTarget();
      const lastNeeded = lastNeededSegment(marked, failurePoint);
      await restoreOnFreshHost(store, marked, lastNeeded);
      await verify(store, marked, failurePoint, lastNeeded);
      result.verdict = verdictOf(result);
      result.status = result.verdict.startsWith('passed') ? 'passed' : 'failed';
    },
    {
      failed(err, status) {
        result.status = status;
        result.errors.push(failureMessage(err));
        result.verdict = `${status}: ${failureMessage(err).split('\n')[0]}`;
      },
      async save() {
        step('save results');
        result.finishedAt = new Date().toISOString();
        return resultCalls.saveDrillResult({ runId, result });
      },
      async teardown() {
        step('teardown');
        const errors = await teardownAll(provider, provisioned);
        if (!spec.backup.keep)
          await providerCalls.removeBackupStore({ runId, store: spec.backup.store }).catch((err) => errors.push(failureMessage(err)));
        board.setPercent(100);
        return errors;
      },
    },
  );
  return finishDrill(board, outcome, 'restore-drill', runId, result, {
    tool: result.backupTool?.name ?? spec.backup.tool,
    toolVersion: result.backupTool?.version ?? null,
    backupBytes: result.backup?.repositoryBytes ?? null,
    databaseBytes: result.backup?.databaseBytes ?? null,
    backupSeconds: result.backup?.seconds ?? null,
    verifySeconds: result.verification.backupVerify?.seconds ?? null,
    fetchSeconds: result.rto?.fetchSeconds ?? null,
    replaySeconds: result.rto?.replaySeconds ?? null,
    promoteSeconds: result.rto?.promoteSeconds ?? null,
    rtoSeconds: result.rto?.totalSeconds ?? null,
    rpoSeconds: result.rpo?.seconds ?? null,
    rpoBytes: result.rpo?.bytes ?? null,
    lostMarkers: result.rpo?.lostMarkers ?? null,
  });
}

/** The one line a person reads first: "passed: ..." with the figures, or "failed: ..." with every reason. */
export function verdictOf(r: RestoreDrillResult): string {
  const v = r.verification;
  const checks: [string, { ok: boolean; detail: string } | undefined][] = [
    ['marker rows', v.ledger],
    ['checksums', v.checksums],
    ['pg_amcheck', v.amcheck],
    ['archive', v.archiveContinuity],
    ['repository', v.backupVerify],
  ];
  const failed = checks.filter(([, c]) => c && !c.ok).map(([name, c]) => `${name}: ${c!.detail.split('\n')[0]}`);
  if (r.recovery && !r.recovery.ok) return `failed: ${r.recovery.detail.split('\n')[0]}${failed.length ? `; ${failed.join('; ')}` : ''}`;
  if (failed.length) return `failed: ${failed.join('; ')}`;
  const target = r.target?.type === 'latest' ? 'the end of the archive' : `${r.target?.type} ${r.target?.time ?? r.target?.lsn}`;
  const rto = r.rto ? `RTO ${round(r.rto.totalSeconds)} s (fetch ${round(r.rto.fetchSeconds)}, replay ${round(r.rto.replaySeconds)}, promote ${round(r.rto.promoteSeconds)})` : '';
  const rpo = r.rpo
    ? `RPO ${round(r.rpo.seconds)} s archive lag (${r.rpo.bytes} bytes)${r.rpo.lostMarkers !== null ? `, ${r.rpo.lostMarkers} marker rows lost` : ''}`
    : '';
  return `passed: restored to ${target}; ${v.ledger?.detail}; ${r.target?.checksums ? 'checksums equal' : 'checksums not compared (writes ran up to the failure)'}; pg_amcheck clean; archive continuous; ${rto}; ${rpo}`;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
