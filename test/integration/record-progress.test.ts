/**
 * Records the progress series that test/unit/eta-rule.test.ts holds the ETA rule on: every heartbeat the real load,
 * VACUUM and backlog phases send on a real Postgres at the demo's sizes (the local-quick preset), in order, with the
 * exact measure each step's ETA was read from. Not part of `npm test` (minutes of real work): skipped unless
 * STORAGE_LAB_RECORD_PROGRESS=1. See test/fixtures/progress/README.md.
 *
 *   npx tsc -p tsconfig.json && STORAGE_LAB_RECORD_PROGRESS=1 npx jest --runInBand dist/test/integration/record-progress.test.js
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBacklogPhase } from '../../activities/host/phases/backlog';
import { loadData } from '../../activities/host/load';
import { runVacuumPhase } from '../../activities/host/phases/vacuum';
import type { ActivityProgress } from '../../common/core/messages';
import { PRESETS } from '../../common/input/presets';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { withConnection } from '../../lib/pg';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';

const maybe = process.env.STORAGE_LAB_RECORD_PROGRESS === '1' ? describe : describe.skip;

export const PROGRESS_FIXTURE = path.join(PROJECT_ROOT, 'test', 'fixtures', 'progress', 'local-quick.json');

/** The demo's sizes (the local-quick preset), on the machine's own disk: preparation runs uncapped there too. */
const DEMO = PRESETS['local-quick'] as {
  postgres: { sharedBuffersMiB: number; maxWalSizeMiB: number; settings: Record<string, string> };
  data: { scale: number; chunkRows: number; loadWriters: number };
  workload: { clients: number; threads: number; script: string };
  phases: { vacuum: { bloatMB: number }; backlog: { backlogMB: number } };
};

maybe('recording the progress series of the load, VACUUM and backlog phases (STORAGE_LAB_RECORD_PROGRESS=1)', () => {
  let host: BenchHost;

  beforeAll(async () => {
    host = await startBenchHost('progress', {
      shared_buffers: `${DEMO.postgres.sharedBuffersMiB}MB`,
      max_wal_size: `${DEMO.postgres.maxWalSizeMiB}MB`,
      ...DEMO.postgres.settings,
      wal_level: 'logical',
    });
  });

  afterAll(async () => {
    await host?.close();
  });

  it('records every heartbeat of the three phases', async () => {
    const heartbeats: ActivityProgress[] = [];
    const phases: { phase: string; startedAt: string; endedAt: string; result: Record<string, unknown> }[] = [];
    const recorded = async (phase: string, run: () => Promise<object>): Promise<void> => {
      const env = new MockActivityEnvironment();
      env.on('heartbeat', (beat: ActivityProgress) => heartbeats.push(beat));
      const startedAt = new Date().toISOString();
      const result: object = await env.run(run);
      phases.push({ phase, startedAt, endedAt: new Date().toISOString(), result: pickSeconds(result as Record<string, unknown>) });
    };
    const { deps } = host;
    const hostId = deps.config.hostId;
    await recorded('load', () => loadData(deps, { hostId, scale: DEMO.data.scale, chunkRows: DEMO.data.chunkRows, writers: DEMO.data.loadWriters }));
    await recorded('vacuum', () => runVacuumPhase(deps, { hostId, bloatMB: DEMO.phases.vacuum.bloatMB }));
    await recorded('backlog', () =>
      runBacklogPhase(deps, { hostId, backlogMB: DEMO.phases.backlog.backlogMB, scale: DEMO.data.scale, ...DEMO.workload }),
    );
    const fixture = {
      recorded: {
        by: 'test/integration/record-progress.test.ts',
        sizes: { data: DEMO.data, bloatMB: DEMO.phases.vacuum.bloatMB, backlogMB: DEMO.phases.backlog.backlogMB, clients: DEMO.workload.clients },
        machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, shared with other work`,
        postgres: await withConnection(deps.config, (c) => c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).then((r) => r.rows[0].v),
      },
      phases,
      heartbeats,
    };
    mkdirSync(path.dirname(PROGRESS_FIXTURE), { recursive: true });
    writeFileSync(PROGRESS_FIXTURE, `${JSON.stringify(fixture, null, 0).replace(/\},\{"hostId"/g, '},\n{"hostId"')}\n`);
    console.log(`${PROGRESS_FIXTURE}: ${heartbeats.length} heartbeats, ${heartbeats.filter((b) => b.measure).length} with a measure`);
    expect(heartbeats.some((b) => b.measure?.step === 'writing backlog')).toBe(true);
  });
});

/** A phase result's durations (what the fixture needs to know when each step ended), without its other figures. */
function pickSeconds(result: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(result).filter(([k, v]) => /Seconds$/.test(k) && typeof v === 'number'));
}
