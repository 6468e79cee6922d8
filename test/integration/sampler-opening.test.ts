/**
 * The sampler's opening reading and an earlier workload's backends (issue 21's "page-read time: samples vs server"):
 * a backend sends its unflushed statistics as it exits, so a backend of the warm-up that exits just after the TPS
 * run's opening reading puts its I/O into the server's figure of the TPS window, where no sample saw it. Shown on a
 * real PostgreSQL 17 with pg_stat_io: an opening reading taken at once counts such a backend's pending writes; the
 * workload sampler's, which waits for earlier workloads to go, does not.
 */
import type { Client } from 'pg';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';
import { connectLocal } from '../../lib/pg';
import { workloadAppName } from '../../lib/pgbench-workload';
import { startSampler, startSampling } from '../../lib/sampler';
import { findPostgresBinDir } from '../../lib/postgres-binaries';

const maybe = findPostgresBinDir(17) ? describe : describe.skip;

maybe('the sampler opens after earlier workloads are gone (integration, PostgreSQL 17)', () => {
  let host: BenchHost;

  beforeAll(async () => {
    host = await startBenchHost('sampler-opening', { track_io_timing: 'on', autovacuum: 'off', shared_buffers: '16MB' }, { version: 17 });
  });
  afterAll(async () => {
    await host?.close();
  });

  /**
   * A warm-up backend with statistics it has not sent: its first statement flushes (nothing sent yet), the second,
   * within the second that follows, waits for the next flush, which comes after a second idle or at exit.
   */
  async function warmupBackendWithPendingStats(): Promise<Client> {
    const c = await connectLocal(host.deps.config, { applicationName: workloadAppName('warmup') });
    await c.query('CREATE TABLE IF NOT EXISTS public.filler (g int, pad text)');
    await c.query("INSERT INTO public.filler SELECT g, repeat('x', 200) FROM generate_series(1, 40000) g");
    return c;
  }

  /** The client backends' pg_stat_io extends counted in a half-second window opened while the warm-up backend exits. */
  async function extendsInWindow(open: () => Promise<{ stop(): Promise<{ io: Record<string, { extends: number }> | null }> }>): Promise<number> {
    const warmup = await warmupBackendWithPendingStats();
    const exiting = new Promise((r) => setTimeout(r, 300)).then(() => warmup.end());
    const sampler = await open();
    await exiting;
    await new Promise((r) => setTimeout(r, 500));
    const d = await sampler.stop();
    return d.io?.['client backend']?.extends ?? 0;
  }

  it('an opening reading taken at once counts what the exiting warm-up backend flushes (the mechanism)', async () => {
    const counted = await extendsInWindow(async () =>
      startSampling(await connectLocal(host.deps.config, { applicationName: 'test sampler' }), {
        intervalMs: 50,
        sessions: { applicationName: workloadAppName('tps') },
        counters: null,
        databaseSize: 'current',
      }),
    );
    console.log(`opening at once: ${counted} blocks extended by the warm-up counted in the window`);
    expect(counted).toBeGreaterThan(500);
  });

  it('the workload sampler waits for the warm-up backend to go, so its statistics stay out of the window', async () => {
    const counted = await extendsInWindow(() => startSampler(host.deps.config, { intervalMs: 50, applicationName: workloadAppName('tps') }));
    console.log(`opening after earlier workloads: ${counted} blocks extended by the warm-up counted in the window`);
    expect(counted).toBeLessThan(50);
  });
});
