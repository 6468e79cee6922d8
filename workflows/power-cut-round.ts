/**
 * One power cut: the writer commits ledger rows on the primary and records each acknowledged one on its own host; at a
 * moment drawn from the spec's seed the primary's power is cut (its modelled volume drops what it had not made
 * durable, every process of the host dies); its agent is started again and PostgreSQL recovers from the crash on what
 * survived; then every acknowledged commit is looked up, and pg_amcheck and the checksums check the cluster. A round
 * passes when the server came back, no acknowledged commit is missing, and the checks are clean.
 */
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import type { PowerCutCount } from '../activities/host/power-cut';
import { FAILURE_TYPES } from '../common/core/errors';
import type { PowerCutRecord } from '../common/core/hosts';
import type { PowerCutClusterCheck, PowerCutRound } from '../common/results/drill-result';
import { IDS_PER_ROUND, type WriterResult } from './failover-round';
import { currentClaimant } from './owner';
import { CHECK_TIMEOUT_SECONDS, cutMoment, primaryAddress, provisionPowerCutHosts, type PowerCutDrill } from './power-cut-steps';
import { powerCutCalls } from './proxies';

type Recovery = Awaited<ReturnType<PowerCutDrill['calls']['measure']['recoverAfterPowerCut']>>;

/** Round `round`, from the first write to the checks after crash recovery; fails when the round did not pass. */
export async function powerCutRound(d: PowerCutDrill, round: number): Promise<void> {
  const { writer, powerCut, provider } = d.spec;
  const cutAfterSeconds = cutMoment(powerCut, round);
  d.progress(`round ${round}: writing on ${d.host}`, round);
  const writing = d.clientCalls.measure.runFailoverWriter.executeWithOptions(
    { summary: `round ${round}: ${writer.connections} writers commit ledger rows on the primary and record every acknowledged one` },
    [
      {
        hostId: d.client,
        round,
        nodes: [primaryAddress(d)],
        initialNode: 'n1',
        connections: writer.connections,
        firstId: round * IDS_PER_ROUND + 1,
        // No other node takes over: the writer stops maxOutageSeconds after the last commit the primary acknowledged.
        afterSwitchSeconds: writer.maxOutageSeconds,
        maxOutageSeconds: writer.maxOutageSeconds,
        maxSeconds: d.timeouts.measureSeconds - 600,
      },
    ],
  );
  // A failed writer must not leave this round waiting on its timer.
  writing.catch(() => undefined);
  await sleep(cutAfterSeconds * 1000);
  d.progress(`round ${round}: cut the power of ${d.host}`, round + 0.3, d.host);
  const cut = await powerCutCalls.cutPower.executeWithOptions(
    { summary: `round ${round}: cut the power of the primary ${d.host} after ${cutAfterSeconds} s of writes (its device drops what it had not made durable)` },
    [{ provider, hostId: d.host, owner: currentClaimant() }],
  );
  const written = await writing;
  // The host's agent died with its power: provisioning the host again starts it, on the volume as the cut left it.
  d.progress(`round ${round}: crash recovery on ${d.host}`, round + 0.5, d.host);
  await provisionPowerCutHosts(d, [d.host]);
  const recovery = await d.calls.measure.recoverAfterPowerCut.executeWithOptions(
    { summary: `round ${round}: start PostgreSQL on what the cut left; its crash recovery, timed` },
    [{ hostId: d.host, timeoutSeconds: powerCut.recoveryTimeoutSeconds }],
  );
  let count: PowerCutCount | null = null;
  let check: PowerCutClusterCheck | null = null;
  if (recovery.started) {
    d.progress(`round ${round}: count and check`, round + 0.8, d.host);
    [count, check] = await Promise.all([
      d.clientCalls.measure.countAfterPowerCut.executeWithOptions({ summary: `round ${round}: every acknowledged commit looked up on the recovered primary` }, [
        { hostId: d.client, primary: primaryAddress(d), rounds: Array.from({ length: round }, (_, i) => i + 1) },
      ]),
      d.calls.measure.checkClusterAfterPowerCut.executeWithOptions({ summary: `round ${round}: pg_amcheck over every database, the checksums` }, [
        { hostId: d.host, timeoutSeconds: CHECK_TIMEOUT_SECONDS },
      ]),
    ]);
  }
  const entry = roundEntry(d, round, { cutAfterSeconds, cut, written, recovery, count, check });
  d.result.rounds.push(entry);
  if (!entry.ok) throw ApplicationFailure.nonRetryable(`round ${round}: ${entry.error}`, FAILURE_TYPES.verification);
}

/**
 * What a count's failure says of the cluster: the lab's role password is set (and committed) when the server is
 * configured, before any cut, so a server that refuses it came back without that committed change.
 */
export function countErrorMeaning(error: string): string {
  return /password authentication failed for user/.test(error) ? ' (the lab role\'s password, committed before the first cut, did not survive it: committed changes were lost)' : '';
}

/** A round's record, and whether it passed; every problem named, with the setting that decides it where one does. */
export function roundEntry(
  d: Pick<PowerCutDrill, 'host' | 'result'>,
  round: number,
  m: { cutAfterSeconds: number; cut: PowerCutRecord; written: WriterResult; recovery: Recovery; count: PowerCutCount | null; check: PowerCutClusterCheck | null },
): PowerCutRound {
  const { written, recovery, count, check } = m;
  const set = check?.settings ?? d.result.baseline?.settings ?? null;
  const settings = set ? ` (fsync = ${set.fsync}, synchronous_commit = ${set.synchronous_commit})` : '';
  const problems: string[] = [];
  if (written.lastAckBeforeKillAt === null) problems.push(`the writer had no acknowledged commit before the cut; raise powerCut.earliestSeconds`);
  if (!recovery.started)
    problems.push(
      `PostgreSQL did not come back from the power cut${settings}: ${recovery.log.fatal ? `${recovery.log.fatal.message} (${recovery.detail.split('\n')[0]})` : recovery.detail.split('\n')[0]}; the server log ends: ${recovery.detail.split('\n').slice(-3).join(' | ')}`,
    );
  const counted = count?.ok ? count.count : null;
  if (count && !count.ok) problems.push(`the acknowledged commits could not be counted after the cut${settings}: ${count.error}${countErrorMeaning(count.error)}`);
  if (counted && counted.lost > 0)
    problems.push(`${counted.lost} acknowledged commits lost by the power cut${settings} (first ids ${counted.lostSample.join(', ')})`);
  if (check && !check.amcheck.ok) problems.push(`corrupt cluster after the power cut${settings}: pg_amcheck: ${check.amcheck.detail}`);
  if (check && (check.checksumFailures ?? 0) > 0) problems.push(`${check.checksumFailures} pages failed their checksums after the power cut${settings}`);
  return {
    round,
    host: d.host,
    cutAfterSeconds: m.cutAfterSeconds,
    cut: m.cut,
    writer: {
      acknowledged: written.acknowledged,
      failedWrites: written.failedWrites,
      inDoubt: written.inDoubt,
      lastAckBeforeCutAt: written.lastAckBeforeKillAt,
      stopReason: written.stopReason,
    },
    recovery: {
      started: recovery.started,
      seconds: recovery.seconds,
      crashRecovery: recovery.log.crashRecovery,
      redoSeconds: recovery.log.redoSeconds,
      redoDoneLsn: recovery.log.redoDoneLsn,
      fatal: recovery.log.fatal?.message ?? null,
      detail: recovery.detail,
      ...(recovery.lockFile ? { lockFile: recovery.lockFile } : {}),
    },
    lostCommits: counted ? counted.lost : null,
    lostSample: counted ? counted.lostSample : [],
    acknowledgedTotal: counted ? counted.acknowledged : 0,
    inDoubtPresent: counted ? counted.inDoubtPresent : 0,
    countError: count && !count.ok ? count.error : null,
    check,
    ok: problems.length === 0,
    ...(problems.length ? { error: problems.join('; ') } : {}),
  };
}
