/**
 * The failover drill: a primary and two standbys on separate hosts, streaming replication, and in "sync" mode
 * synchronous_commit = on with synchronous_standby_names = 'ANY 1 (<both standbys>)'. Each round a writer on a
 * client host of its own commits ledger rows and records every acknowledged id on that host; the primary host is
 * killed (kill -9 of everything on it: postmaster and agent); the standby that received the most WAL is promoted,
 * the other is repointed to it, and the writer finds the new primary. The round measures write downtime (last
 * acknowledged commit before the kill to the first after it: the RTO) and counts acknowledged ids missing on the new
 * primary (0 under ANY 1; "async" mode shows the contrast). The old primary rejoins with pg_rewind for the next round.
 * Results are saved, then every host is torn down in a non-cancellable scope. One object argument: {"preset":"ci"}.
 */
import { ApplicationFailure, CancellationScope, isCancellation, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { DrillNode, runFailoverWriter } from '../activities/host/failover-writer';
import {
  drillResultHead,
  type DrillSummary,
  type FailoverDrillResult,
  type FailoverRound,
  type StandbyPosition,
} from '../common/drill-result';
import { drillPostgresSettings, resolveFailoverDrill, type DrillInput, type FailoverDrillSpec } from '../common/drill-spec';
import { FAILURE_TYPES } from '../common/errors';
import { hostIdFor } from '../common/ids';
import { compareLsn } from '../common/lsn';
import { median } from '../common/stats';
import type { HostRecord } from '../infra/providers/host-provider';
import { drillHostRequest, drillTimeouts, provisionAndWait, teardownAll } from './drill-hosts';
import { failureMessage } from './failures';
import { ProgressBoard } from './progress';
import { hostCalls, preflightCalls, providerCalls, resultCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail, searchAttributes } from './search-attributes';

type WriterResult = Awaited<ReturnType<typeof runFailoverWriter>>;

const NODES = ['n1', 'n2', 'n3'] as const;
type Node = (typeof NODES)[number];

/** Ids of round r start here, so no two rounds share one. */
const IDS_PER_ROUND = 1_000_000_000;
/** Bound on a standby catching up after it was cloned, repointed or rewound. */
const STANDBY_WAIT_SECONDS = 120;

/** The standby to promote: the one that received the most WAL, then replayed the most, then the first. */
export function mostAdvanced(positions: StandbyPosition[]): StandbyPosition {
  const lsn = (v: string | null) => v ?? '0/0';
  return [...positions].sort(
    (a, b) => compareLsn(lsn(b.receiveLsn), lsn(a.receiveLsn)) || compareLsn(lsn(b.replayLsn), lsn(a.replayLsn)),
  )[0];
}

/** synchronous_standby_names of a primary whose standbys are `standbys` ('' in async mode). */
export function quorumOf(mode: FailoverDrillSpec['mode'], standbys: string[]): string {
  return mode === 'sync' ? `ANY 1 (${standbys.join(', ')})` : '';
}

export async function failoverDrillWorkflow(input: DrillInput = {}): Promise<DrillSummary> {
  const runId = workflowInfo().workflowId;
  const spec = acceptInput(resolveFailoverDrill, input, drillSearchAttributes);
  // Settings by the real server, sizes against this environment: before any host exists.
  await preflightOrFail(preflightCalls.preflightDrill({ kind: 'failover', spec }));
  const board = new ProgressBoard(`Failover drill ${runId}`, runId, 1, spec.parentWorkflowId);
  const provider = spec.provider;
  const { writer } = spec;
  const roundSeconds = writer.killAfterSeconds + writer.maxOutageSeconds + writer.afterFailoverSeconds + 30;
  const timeouts = drillTimeouts(spec, roundSeconds);
  const client = hostIdFor(runId, 'client', 0);
  const hostOf = Object.fromEntries(NODES.map((n, i) => [n, hostIdFor(runId, 'node', i + 1)])) as Record<Node, string>;
  const calls = (node: Node) => hostCalls(hostOf[node], timeouts);
  const clientCalls = hostCalls(client, timeouts);
  const settings = drillPostgresSettings(spec);
  const sync = spec.mode === 'sync';
  const records: Partial<Record<Node, HostRecord>> = {};
  const address = (node: Node): DrillNode => ({ node, host: records[node]!.postgres.host, port: records[node]!.postgres.port });
  const request = (hostId: string, role: string) => drillHostRequest(spec, runId, hostId, role, 2 * 2 ** 30);
  const result: FailoverDrillResult = {
    ...drillResultHead('failover-drill', runId, spec),
    mode: spec.mode,
    synchronousStandbyNames: quorumOf(spec.mode, ['n2', 'n3']) || null,
    hosts: { client, nodes: hostOf },
    rounds: [],
    summary: { rounds: 0, lostCommits: 0, rtoSecondsMedian: null, rtoSecondsMax: null },
    errors: [],
  };
  const totalSteps = 2 + spec.rounds;
  const progress = (phase: string, done: number, hostId = client) => {
    board.step(hostId, phase);
    board.setPercent((100 * done) / totalSteps);
  };

  const provisioned: string[] = [];
  let failure: unknown;
  try {
    progress('provision', 0);
    provisioned.push(client, ...NODES.map((n) => hostOf[n]));
    const clientRecord = await provisionAndWait(provider, request(client, 'client'), timeouts);
    await Promise.all(
      NODES.map(async (n) => {
        records[n] = await provisionAndWait(provider, request(hostOf[n], 'node'), timeouts);
      }),
    );

    // Peers on other machines (AWS) may connect for replication, pg_rewind and the writer; 127.0.0.1 already may.
    const peers = [clientRecord, ...NODES.map((n) => records[n]!)].map((r) => r.postgres.host).filter((h) => h !== '127.0.0.1');
    const hbaLines = [...new Set(peers)].flatMap((h) => [`host all all ${h}/32 scram-sha-256`, `host replication all ${h}/32 scram-sha-256`]);

    progress('replication', 1, hostOf.n1);
    let primary: Node = 'n1';
    let standbys: Node[] = ['n2', 'n3'];
    const pg = await calls(primary).setup.configurePostgres({ hostId: hostOf[primary], settings, hbaLines });
    result.postgresVersion = pg.postgresVersion;
    await calls(primary).setup.createFailoverLedger({ hostId: hostOf[primary] });
    await Promise.all(
      standbys.map(async (n) => {
        await calls(n).setup.cloneStandby({ hostId: hostOf[n], primary: address(primary), node: n });
        await calls(n).setup.configurePostgres({ hostId: hostOf[n], settings, hbaLines });
      }),
    );
    // The quorum is set once both standbys stream: with no standby yet, every commit would wait.
    await calls(primary).setup.setReplication({ hostId: hostOf[primary], primary: null, node: primary, synchronousStandbyNames: quorumOf(spec.mode, standbys) });
    await calls(primary).measure.waitForStandbys({ hostId: hostOf[primary], nodes: standbys, sync, timeoutSeconds: STANDBY_WAIT_SECONDS });

    for (let round = 1; round <= spec.rounds; round++) {
      progress(`round ${round}: writing on ${primary}`, 1 + round - 1, client);
      const writing: Promise<WriterResult> = clientCalls.measure.runFailoverWriter.executeWithOptions(
        { summary: `round ${round}: ${writer.connections} writers commit ledger rows on the primary (${primary}) and record every acknowledged id` },
        [
          {
            hostId: client,
            round,
            nodes: NODES.map(address),
            initialNode: primary,
            connections: writer.connections,
            firstId: round * IDS_PER_ROUND + 1,
            afterSwitchSeconds: writer.afterFailoverSeconds,
            maxOutageSeconds: writer.maxOutageSeconds,
            maxSeconds: roundSeconds,
          },
        ],
      );
      // A failed writer must not leave this round waiting on its timer.
      writing.catch(() => undefined);
      await sleep(writer.killAfterSeconds * 1000);

      progress(`round ${round}: kill ${primary}`, 1 + round - 0.8, hostOf[primary]);
      const killedAt = new Date().toISOString();
      await providerCalls.killHost.executeWithOptions({ summary: `round ${round}: kill -9 the primary ${primary} (${hostOf[primary]})` }, [
        { provider, hostId: hostOf[primary] },
      ]);
      const positions: StandbyPosition[] = await Promise.all(
        standbys.map(async (n) => {
          const p = await calls(n).measure.standbyPosition({ hostId: hostOf[n] });
          return { hostId: hostOf[n], node: n, receiveLsn: p.receiveLsn, replayLsn: p.replayLsn };
        }),
      );
      const winner = mostAdvanced(positions).node as Node;
      const others = standbys.filter((n) => n !== winner);
      const killed = primary;

      progress(`round ${round}: promote ${winner}`, 1 + round - 0.6, hostOf[winner]);
      // The other standby follows the winner before the promotion (cascading, then across the new timeline), and
      // the winner's quorum names it and the old primary, so commits after the promotion have a standby to wait for.
      await Promise.all(
        others.map((n) => calls(n).setup.setReplication({ hostId: hostOf[n], primary: address(winner), node: n, synchronousStandbyNames: '' })),
      );
      await calls(winner).setup.setReplication({
        hostId: hostOf[winner],
        primary: null,
        node: winner,
        synchronousStandbyNames: quorumOf(spec.mode, [...others, killed]),
      });
      const promoted = await calls(winner).measure.promoteStandby.executeWithOptions({ summary: `round ${round}: promote ${winner}, the most advanced standby` }, [
        { hostId: hostOf[winner] },
      ]);
      const written: WriterResult = await writing;
      const ledger = await clientCalls.measure.countLostCommits({
        hostId: client,
        primary: address(winner),
        rounds: Array.from({ length: round }, (_, i) => i + 1),
      });

      const entry: FailoverRound = {
        round,
        killedHost: hostOf[killed],
        killedNode: killed,
        killedAt,
        standbys: positions,
        promotedHost: hostOf[winner],
        promotedNode: winner,
        repointedHost: others.map((n) => hostOf[n]).join(', '),
        promoteSeconds: promoted.seconds,
        writer: {
          acknowledged: written.acknowledged,
          failedWrites: written.failedWrites,
          inDoubt: written.inDoubt,
          lastAckBeforeKillAt: written.lastAckBeforeKillAt,
          firstAckAfterAt: written.firstAckAfterAt,
          newPrimaryNode: written.newPrimaryNode,
          outageSeconds: written.outageSeconds,
        },
        rtoSeconds: written.outageSeconds,
        lostCommits: ledger.lost,
        lostSample: ledger.lostSample,
        acknowledgedTotal: ledger.acknowledged,
        inDoubtPresent: ledger.inDoubtPresent,
        oldPrimary: { action: 'left down', seconds: null, detail: 'rejoin is "none"' },
        ok: false,
      };
      const problems: string[] = [];
      if (written.outageSeconds === null)
        problems.push(
          written.lastAckBeforeKillAt === null
            ? `the writer had no acknowledged commit on ${killed} before the kill; raise writer.killAfterSeconds`
            : `no write was acknowledged on a new primary (${written.stopReason})`,
        );
      else if (written.newPrimaryNode !== winner) problems.push(`the writer's new primary was ${written.newPrimaryNode}, not the promoted ${winner}`);
      if (sync && ledger.lost > 0) problems.push(`${ledger.lost} acknowledged commits missing on ${winner} (first ids ${ledger.lostSample.join(', ')})`);
      entry.ok = problems.length === 0;
      if (problems.length) entry.error = problems.join('; ');
      result.rounds.push(entry);

      if (spec.rejoin === 'rewind') {
        progress(`round ${round}: ${killed} rejoins`, 1 + round - 0.3, hostOf[killed]);
        // Provisioning a killed host again starts its agent; its data folder is where the kill left it.
        await provisionAndWait(provider, request(hostOf[killed], 'node'), timeouts);
        const rejoined = await calls(killed).setup.rejoinAsStandby.executeWithOptions(
          { summary: `round ${round}: ${killed} rejoins as a standby of ${winner} (pg_rewind)` },
          [{ hostId: hostOf[killed], primary: address(winner), node: killed }],
        );
        await calls(killed).setup.configurePostgres({ hostId: hostOf[killed], settings, hbaLines });
        await calls(winner).measure.waitForStandbys({ hostId: hostOf[winner], nodes: [...others, killed], sync, timeoutSeconds: STANDBY_WAIT_SECONDS });
        entry.oldPrimary = { action: rejoined.action, seconds: rejoined.seconds, detail: rejoined.detail };
        standbys = [...others, killed];
      } else standbys = others;
      primary = winner;
      if (!entry.ok) throw ApplicationFailure.nonRetryable(`round ${round}: ${entry.error}`, FAILURE_TYPES.verification);
    }
  } catch (err) {
    failure = err;
    result.status = isCancellation(err) ? 'cancelled' : 'failed';
    result.errors.push(failureMessage(err));
    board.fail(failureMessage(err).split('\n')[0]);
  }

  const rtos = result.rounds.map((r) => r.rtoSeconds).filter((x): x is number => x !== null);
  result.summary = {
    rounds: result.rounds.length,
    lostCommits: Math.max(0, ...result.rounds.map((r) => r.lostCommits)),
    rtoSecondsMedian: rtos.length ? Math.round(median(rtos)! * 1000) / 1000 : null,
    rtoSecondsMax: rtos.length ? Math.max(...rtos) : null,
  };
  if (!failure) result.status = 'passed';
  result.verdict = verdictOf(result, failure);

  // Compensation: results first (nothing measured is lost), then every host, whatever happened.
  const location = await CancellationScope.nonCancellable(async () => {
    board.setPhase('save results');
    result.finishedAt = new Date().toISOString();
    let saved = '';
    try {
      saved = await resultCalls.saveDrillResult({ runId, result });
    } catch (err) {
      failure ??= err;
      board.fail(`saving results failed: ${failureMessage(err)}`);
    }
    board.setPhase('teardown');
    for (const e of await teardownAll(provider, provisioned)) board.fail(e);
    board.setPercent(100);
    return saved;
  });
  upsertSearchAttributes(searchAttributes({ status: result.status }));
  board.setPhase(result.status);
  if (failure) throw failure;
  return {
    runId,
    kind: 'failover-drill',
    status: result.status,
    verdict: result.verdict,
    location,
    figures: {
      rounds: result.summary.rounds,
      lostCommits: result.summary.lostCommits,
      rtoSecondsMedian: result.summary.rtoSecondsMedian,
      rtoSecondsMax: result.summary.rtoSecondsMax,
    },
  };
}

/** The one line a person reads first. */
function verdictOf(r: FailoverDrillResult, failure: unknown): string {
  const s = r.summary;
  const figures = `${s.rounds} failover${s.rounds === 1 ? '' : 's'}, ${s.lostCommits} acknowledged commits lost, RTO median ${s.rtoSecondsMedian ?? '–'} s (max ${s.rtoSecondsMax ?? '–'} s)`;
  if (failure) return `${r.status}: ${failureMessage(failure).split('\n')[0]} (${figures})`;
  return r.mode === 'sync'
    ? `passed: ${figures} under synchronous_standby_names = ANY 1`
    : `passed (async, for contrast): ${figures}; without synchronous standbys acknowledged commits can be lost`;
}
