/**
 * The modelled volume's server's own Go tests (infra/volume): its model and store (unit tests of logic), and its own
 * loop on /dev/fuse on a real FUSE mount (the model's latency and data, the queue depth in arrival order, the budget,
 * a power cut), which need root and /dev/fuse and skip themselves without them. Run here so that `npm test` holds
 * them: the bootstrap built the server, so Go and its modules are on this machine.
 */
import path from 'node:path';
import { runProcess, toolEnv } from '../../lib/process-runner';

const volumeDir = path.resolve(__dirname, '../../../infra/volume');

describe('the volume server\'s Go tests (integration: real FUSE mounts where root)', () => {
  it('pass', async () => {
    const env = { ...toolEnv(), HOME: process.env.HOME ?? '/root', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly', ...(process.env.GOPATH ? { GOPATH: process.env.GOPATH } : {}), ...(process.env.GOCACHE ? { GOCACHE: process.env.GOCACHE } : {}), ...(process.env.GOMODCACHE ? { GOMODCACHE: process.env.GOMODCACHE } : {}) };
    const r = await runProcess('go', ['test', '-count=1', '-v', '.'], { cwd: volumeDir, env, timeoutMs: 240_000, okExitCodes: [0, 1] });
    const out = r.stdout + r.stderr;
    // Every test named, and none failed: a run that compiled nothing, or skipped the mount tests as root, fails here.
    expect(out).not.toMatch(/--- FAIL/);
    expect(r.exitCode).toBe(0);
    for (const name of ['TestLoopServesDataAtTheModelsLatency', 'TestLoopQueuesBeyondTheQueueDepthInArrivalOrder', 'TestLoopHoldsTheBudget', 'TestLoopPowerCutDropsWhatWasNotFlushed', 'TestServeTakesTheModelsLatency']) {
      expect(out).toContain(`--- ${process.getuid?.() === 0 || !name.startsWith('TestLoop') ? 'PASS' : 'SKIP'}: ${name}`);
    }
  }, 300_000);
});
