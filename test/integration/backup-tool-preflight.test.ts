/**
 * The preflight refuses a backup tool the hosts will not have, naming the field and the fix: locally WAL-G from the
 * tools cache (or PATH), on AWS WAL-G from the control worker that ships it. The real preflight activities against
 * this machine; WAL-G is hidden by pointing the tools cache at an empty folder.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createPreflightActivities } from '../../activities/control/preflight';
import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { resolveSpec } from '../../common/input/resolve';
import type { HostProvider } from '../../infra/providers/host-provider';

describe('backup tool preflight', () => {
  // Below the suite's folder, which the postgres user can reach (the preflight checks that too).
  const hostsDir = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'preflight-hosts-'));
  chmodSync(hostsDir, 0o755);
  const emptyCache = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'no-tools-'));
  const activities = createPreflightActivities({ hostsDir }, () => ({ name: 'local' }) as unknown as HostProvider);
  const env = new MockActivityEnvironment();
  const saved = process.env.STORAGE_LAB_CACHE;
  afterAll(() => {
    process.env.STORAGE_LAB_CACHE = saved;
    if (saved === undefined) delete process.env.STORAGE_LAB_CACHE;
    rmSync(hostsDir, { recursive: true, force: true });
    rmSync(emptyCache, { recursive: true, force: true });
  });

  const refusal = (p: Promise<unknown>) => p.then(() => 'accepted', (err: Error) => err.message);

  it('accepts WAL-G (the default) when this machine has it', async () => {
    await expect(env.run(activities.preflightDrill, { kind: 'restore' as const, spec: resolveRestoreDrill({ preset: 'ci' }) })).resolves.toMatchObject({ warnings: expect.any(Array) });
  });

  it('refuses WAL-G when neither the tools cache nor PATH has it, naming the field; pgBackRest or no archive passes', async () => {
    process.env.STORAGE_LAB_CACHE = emptyCache;
    try {
      const restore = await refusal(env.run(activities.preflightDrill, { kind: 'restore' as const, spec: resolveRestoreDrill({ preset: 'ci' }) }));
      expect(restore).toMatch(/backup\.tool: WAL-G is not installed here; run infra\/bootstrap\.sh .* or set backup\.tool to "pgbackrest"/);
      const experiment = await refusal(env.run(activities.preflight, { spec: resolveSpec({ preset: 'ci', durability: { enabled: true } }) }));
      expect(experiment).toMatch(/durability\.tool: WAL-G is not installed here/);
      expect(await refusal(env.run(activities.preflightDrill, { kind: 'restore' as const, spec: resolveRestoreDrill({ preset: 'ci', backup: { tool: 'pgbackrest' } }) }))).toBe('accepted');
      expect(await refusal(env.run(activities.preflightDrill, { kind: 'failover' as const, spec: resolveFailoverDrill({ preset: 'ci', backup: { enabled: false } }) }))).toBe('accepted');
    } finally {
      process.env.STORAGE_LAB_CACHE = saved ?? '';
      if (saved === undefined) delete process.env.STORAGE_LAB_CACHE;
    }
  });
});
