/**
 * The restore drill's steps, in the order they run (RESTORE_DRILL_STEPS: the drill's plan and its progress are the
 * same list), each a named function of the drill's shared state.
 */
import type { RecoveryTarget } from '../common/input/backup-store';
import { hostIdFor, type NameScheme } from '../common/core/ids';
import { lastArchivedSegment, parseSegmentName, segmentOfLsn } from '../common/core/lsn';
import { backupStoreLocation, type ResolvedBackupStore } from '../common/input/backup-store';
import { restoreDrillBounds, type HostTimeouts } from '../common/input/bounds';
import { drillLabSettings, drillVolumeBytes, type RestoreDrillSpec } from '../common/input/drill-spec';
import { userPostgresSettings } from '../common/input/postgres-settings';
import { drillResultHead, repositoryVerification, type DrillSummary, type RestoreDrillResult, type RestoreTarget } from '../common/results/drill-result';
import { UndoStack } from './compensation';
import { drillHostShape } from './drill-skeleton';
import { hostRequest, provisionHosts } from './hosts';
import type { ProgressBoard } from './progress';
import { currentClaimant } from './owner';
import { hostCalls, providerCalls, type HostCalls } from './proxies';

/** The drill as its steps share it: the spec, the two hosts and their calls, the result, and what earlier steps found. */
export interface RestoreDrill {
  spec: RestoreDrillSpec;
  runId: string;
  board: ProgressBoard;
  timeouts: HostTimeouts;
  undo: UndoStack;
  source: string;
  restore: string;
  src: HostCalls;
  dst: HostCalls;
  /** The lab's settings and the spec's travel apart; the host checks each and writes archive_command itself. */
  settings: Pick<Parameters<HostCalls['setup']['configurePostgres']>[0], 'server' | 'user'>;
  volumeBytes: number;
  result: RestoreDrillResult;
  /** The drill's backup store, once prepared. */
  store?: ResolvedBackupStore;
  /** The recovery target as marked on the source, with its WAL position. */
  marked?: { target: RestoreTarget; walLsn: string };
  /** The restore's fetch time, for the RTO. */
  fetchSeconds?: number;
}

/** A restore drill before its first step: a result that says failed until the verdict says otherwise. */
export function restoreDrill(runId: string, spec: RestoreDrillSpec, board: ProgressBoard, scheme: NameScheme = 'sha256'): RestoreDrill {
  const source = hostIdFor(runId, 'source', 0, scheme);
  const restore = hostIdFor(runId, 'restore', 0, scheme);
  const timeouts = restoreDrillBounds(spec);
  return {
    spec,
    runId,
    board,
    timeouts,
    undo: new UndoStack(),
    source,
    restore,
    src: hostCalls(source, timeouts),
    dst: hostCalls(restore, timeouts),
    settings: { server: drillLabSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
    volumeBytes: drillVolumeBytes(spec),
    result: {
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
    },
  };
}

interface Step {
  name: string;
  run(d: RestoreDrill): Promise<void>;
  /** Whether the drill takes this step (default: always). */
  when?(spec: RestoreDrillSpec): boolean;
}

/** The drill's plan: its steps in order. The ones from 'provision restore host' on run on the restore host. */
export const RESTORE_DRILL_STEPS: Step[] = [
  { name: 'backup store', run: prepareStore },
  { name: 'provision source', run: (d) => provision(d, d.source, 'source') },
  { name: 'configure source', run: configureSource },
  { name: 'load', run: load },
  { name: 'base backup', run: baseBackup },
  { name: 'delta backup', run: deltaBackup, when: (spec) => spec.backup.kind === 'delta' },
  { name: 'writes before target', run: (d) => writeHistory(d, 'writes before target') },
  { name: 'target', run: markTarget },
  { name: 'writes after target', run: writesAfterTarget },
  { name: 'failure', run: failSource },
  { name: 'provision restore host', run: provisionRestoreHost },
  { name: 'fetch', run: fetch },
  { name: 'replay and promote', run: replayAndPromote },
  { name: 'verify', run: verify },
];

/** What every drill does after its plan (runDrill). */
const FINAL_STEPS = ['save results', 'teardown'];

/** Enters a step: the run's stage, the host it runs on, and the drill's percentage, all from the one list. */
export function showStep(d: RestoreDrill, name: string): void {
  const names = [...RESTORE_DRILL_STEPS.map((s) => s.name), ...FINAL_STEPS];
  const index = names.indexOf(name);
  d.board.step(index < names.indexOf('provision restore host') ? d.source : d.restore, name);
  d.board.setPercent((100 * index) / names.length);
}

/** The drill's own prefix of the backup store; its removal is registered first, so it is undone last. */
async function prepareStore(d: RestoreDrill): Promise<void> {
  const { runId, spec } = d;
  if (!spec.backup.keep) d.undo.backupStore(runId, spec.backup.store);
  d.store = await providerCalls.prepareBackupStore({ runId, store: spec.backup.store, keep: spec.backup.keep, owner: currentClaimant() });
  d.result.backupStore = backupStoreLocation(d.store);
}

async function provision(d: RestoreDrill, hostId: string, role: string): Promise<void> {
  const request = hostRequest(d.spec, d.runId, hostId, role, drillHostShape(d.spec, d.runId, d.volumeBytes));
  await provisionHosts(d.undo, d.spec.provider, [request], d.timeouts);
}

/** Archiving through the tool to the store, then the server started with it, and the tool's repository. */
async function configureSource(d: RestoreDrill): Promise<void> {
  const { tool, compression, archiveTimeoutSeconds } = d.spec.backup;
  const hostId = d.source;
  const store = d.store!;
  const archiving = await d.src.setup.configureBackups({ hostId, store, tool, compression });
  d.result.backupTool = { name: archiving.tool, version: archiving.version };
  d.result.postgresVersion = (await d.src.setup.configurePostgres({ hostId, ...d.settings, archiving: { archiveTimeoutSeconds } })).postgresVersion;
  await d.src.setup.initBackupRepository({ hostId, store, tool });
}

async function load(d: RestoreDrill): Promise<void> {
  const { scale, chunkRows, loadWriters } = d.spec.data;
  await d.src.load.loadData({ hostId: d.source, scale, chunkRows, writers: loadWriters });
}

async function baseBackup(d: RestoreDrill): Promise<void> {
  const { tool } = d.spec.backup;
  d.result.backup = await d.src.setup.takeBackup.executeWithOptions({ summary: `full base backup of ${d.source} to ${d.result.backupStore} with ${tool}` }, [
    { hostId: d.source, store: d.store!, tool, kind: 'full' },
  ]);
}

/** Writes for the delta to hold (their markers are before the target too, so the ledger check covers them), then the delta. */
async function deltaBackup(d: RestoreDrill): Promise<void> {
  const { tool } = d.spec.backup;
  await writeHistory(d, 'writes before the delta backup');
  const full = d.result.backup!;
  d.result.fullBackup = full;
  d.result.backup = await d.src.setup.takeBackup.executeWithOptions({ summary: `delta backup of ${d.source} with ${tool}, on top of ${full.label}` }, [
    { hostId: d.source, store: d.store!, tool, kind: 'delta' },
  ]);
}

/** The workload with marker rows on the source, for the spec's seconds before the target. */
async function writeHistory(d: RestoreDrill, label: string): Promise<void> {
  const { clients, markerIntervalMs, beforeSeconds } = d.spec.workload;
  await d.src.measure.writeHistory({ hostId: d.source, label, seconds: beforeSeconds, clients, markerIntervalMs });
}

async function markTarget(d: RestoreDrill): Promise<void> {
  d.marked = await d.src.measure.markTarget({ hostId: d.source, type: d.spec.target, tables: d.spec.checksumTables });
  d.result.target = d.marked.target;
}

/** Writes after the target up to the failure point, whose archive lag is the achieved RPO. */
async function writesAfterTarget(d: RestoreDrill): Promise<void> {
  const { clients, markerIntervalMs, afterSeconds } = d.spec.workload;
  const after = await d.src.measure.writeHistory({ hostId: d.source, label: 'writes after target', seconds: afterSeconds, clients, markerIntervalMs, failurePoint: true });
  const failurePoint = after.failurePoint!;
  d.result.failurePoint = failurePoint;
  d.result.rpo = { seconds: failurePoint.archiveLagSeconds, bytes: failurePoint.archiveLagBytes, lostMarkers: null, lostWindowSeconds: null };
}

/** The failure: the source killed, once the target's segment is archived. */
async function failSource(d: RestoreDrill): Promise<void> {
  // A target inside the archive is the drill's premise: archive_timeout closes its segment within seconds.
  if (d.spec.target !== 'latest')
    await d.src.measure.waitForArchive({ hostId: d.source, lsn: d.marked!.walLsn, timeoutSeconds: 3 * d.spec.backup.archiveTimeoutSeconds + 60 });
  await providerCalls.killHost.executeWithOptions({ summary: `kill -9 everything on ${d.source}: the failure` }, [{ provider: d.spec.provider, hostId: d.source, owner: currentClaimant() }]);
}

/** The last WAL segment the restore needs: the target's, or the newest archived one for "latest". */
function lastNeededSegment(d: RestoreDrill): string {
  const backup = d.result.backup!;
  if (d.spec.target !== 'latest') return segmentOfLsn(d.marked!.walLsn, parseSegmentName(backup.walStop)?.timeline ?? 1);
  return lastArchivedSegment(d.result.failurePoint!.lastArchivedWal) ?? backup.walStop;
}

/** A fresh host reading the store (and, when the spec asks, a segment removed from the archive first). */
async function provisionRestoreHost(d: RestoreDrill): Promise<void> {
  const { tool, compression } = d.spec.backup;
  const hostId = d.restore;
  await provision(d, hostId, 'restore');
  await d.dst.setup.configureBackups({ hostId, store: d.store!, tool, compression });
  if (d.spec.inject.missingWalSegment)
    d.result.injectedMissingSegment = await d.dst.measure.removeArchivedSegment({ hostId, store: d.store!, tool, after: d.result.backup!.walStop, upTo: lastNeededSegment(d) });
}

/** Fetches the backup onto the restore host, with the recovery target. */
async function fetch(d: RestoreDrill): Promise<void> {
  const { spec } = d;
  const marked = d.marked!;
  const target: RecoveryTarget =
    spec.target === 'time' ? { type: 'time', time: marked.target.time! } : spec.target === 'lsn' ? { type: 'lsn', lsn: marked.target.lsn! } : { type: 'latest' };
  const fetched = await d.dst.bulk.restoreBackup.executeWithOptions(
    { summary: `fetch backup ${d.result.backup!.label} onto ${d.restore} with ${spec.backup.tool}, target ${spec.target}` },
    [{ hostId: d.restore, store: d.store!, tool: spec.backup.tool, target }],
  );
  d.fetchSeconds = fetched.fetchSeconds;
}

/** Replays the WAL to the target and promotes: with the fetch, the RTO split. */
async function replayAndPromote(d: RestoreDrill): Promise<void> {
  const { spec, result } = d;
  const recovery = await d.dst.measure.recoverFromBackup.executeWithOptions(
    { summary: `replay WAL to the target and promote, at most ${spec.restoreTimeoutSeconds} s` },
    [{ hostId: d.restore, ...d.settings, timeoutSeconds: spec.restoreTimeoutSeconds }],
  );
  result.recovery = { ok: recovery.ok, detail: recovery.detail, stoppedAt: recovery.stoppedAt, lastTransactionAt: recovery.lastTransactionAt };
  const fetchSeconds = d.fetchSeconds!;
  if (recovery.ok && recovery.replaySeconds !== null && recovery.promoteSeconds !== null)
    result.rto = {
      fetchSeconds,
      replaySeconds: recovery.replaySeconds,
      promoteSeconds: recovery.promoteSeconds,
      totalSeconds: fetchSeconds + recovery.replaySeconds + recovery.promoteSeconds,
    };
}

/** Archive continuity, the repository check, then (after a recovery) markers, checksums and pg_amcheck. */
async function verify(d: RestoreDrill): Promise<void> {
  const { spec, result } = d;
  const store = d.store!;
  const archive = await d.dst.measure.checkArchive({ hostId: d.restore, store, tool: spec.backup.tool, from: result.backup!.walStart, to: lastNeededSegment(d) });
  const c = archive.continuity;
  result.verification.archiveContinuity = {
    ...c,
    detail: c.ok ? `${c.checked} segments ${c.from}..${c.to}, none missing` : `missing from the archive: ${c.missing.join(', ')} (needed between ${c.from} and ${c.to})`,
  };
  result.verification.backupVerify = repositoryVerification(spec.backup.tool, archive.repository);
  if (!result.recovery?.ok) return;
  const latest = spec.target === 'latest';
  const failurePoint = result.failurePoint!;
  const marked = d.marked!;
  const checked = await d.dst.measure.verifyRestore({
    hostId: d.restore,
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

/** The verdict, and the status it implies: a drill that ran to the end passes only when every check did. */
export function concludeRestoreDrill(r: RestoreDrillResult, failure: string | undefined): void {
  if (failure !== undefined) {
    r.verdict = `${r.status}: ${failure.split('\n')[0]}`;
    return;
  }
  r.verdict = verdictOf(r);
  r.status = r.verdict.startsWith('passed') ? 'passed' : 'failed';
}

/** The one line a person reads first: "passed: ..." with the figures, or "failed: ..." with every reason. */
function verdictOf(r: RestoreDrillResult): string {
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

/** The summary's headline figures (the tool comparison's table reads them). */
export function restoreDrillFigures(r: RestoreDrillResult): DrillSummary['figures'] {
  return {
    tool: r.backupTool?.name ?? r.spec.backup.tool,
    toolVersion: r.backupTool?.version ?? null,
    backupBytes: r.backup?.repositoryBytes ?? null,
    databaseBytes: r.backup?.databaseBytes ?? null,
    backupSeconds: r.backup?.seconds ?? null,
    verifySeconds: r.verification.backupVerify?.seconds ?? null,
    fetchSeconds: r.rto?.fetchSeconds ?? null,
    replaySeconds: r.rto?.replaySeconds ?? null,
    promoteSeconds: r.rto?.promoteSeconds ?? null,
    rtoSeconds: r.rto?.totalSeconds ?? null,
    rpoSeconds: r.rpo?.seconds ?? null,
    rpoBytes: r.rpo?.bytes ?? null,
    lostMarkers: r.rpo?.lostMarkers ?? null,
  };
}
