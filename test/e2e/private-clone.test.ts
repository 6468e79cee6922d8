/**
 * A clone below a private folder (mode 0700, as root's home is: /root/storage-lab is where a root user clones) runs
 * the demo's path end to end (issue 21). As root the servers run as the postgres user, who cannot pass that folder:
 * what it must execute or write has to live outside the clone. This test clones this checkout's HEAD below a 0700
 * temporary folder (node_modules, the Temporal CLI, WAL-G and the volume server by symlink, dist/ copied, nothing else
 * shared), then from there:
 * the bootstrap (`npm run demo`'s first half: it must put PostgreSQL 17 outside the clone), the
 * local-quick dry run (its spec checks run PostgreSQL 17's server as the postgres user), `dev up`, and a small real
 * run on PostgreSQL 17 with WAL archiving to WAL-G, whose hosts and backups must land under /var/lib/storage-lab.
 * A stale private copy of PostgreSQL 17 in the clone's cache (a clone bootstrapped before the shared folder) must
 * not be used. Every server binds 127.0.0.1 on free ports; everything is removed at the end.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { backupsDirFor, hostsKeyFile, labPaths, PROJECT_ROOT } from '../../lib/lab-paths';
import { SHARED_POSTGRES_ROOT } from '../../lib/postgres-binaries';
import { runProcess } from '../../lib/process-runner';
import { DEV_PORT_OFFSETS } from '../../client/local-services';
import { freePort, freePortBlock } from '../../lib/net';

const asRoot = process.getuid?.() === 0;

// Without root the servers run as ourselves and a private folder is no obstacle: nothing to prove.
(asRoot ? describe : describe.skip)('a clone below a private folder (end to end, as root)', () => {
  let privateDir: string;
  let clone: string;
  let env: NodeJS.ProcessEnv;
  let hostsDir: string;
  const timings: string[] = [];

  const storageLab = (args: string[], timeoutMs = 300_000) =>
    runProcess(process.execPath, [path.join(clone, 'dist/client/cli.js'), ...args], { cwd: clone, env, timeoutMs, okExitCodes: [0, 1, 2] });
  const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      timings.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  };

  beforeAll(async () => {
    privateDir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-private-'));
    clone = path.join(privateDir, 'storage-lab');
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: PROJECT_ROOT }).toString().trim();
    execFileSync('git', ['clone', '--quiet', '--shared', '--no-checkout', PROJECT_ROOT, clone]);
    execFileSync('git', ['checkout', '--quiet', '--detach', head], { cwd: clone });
    // The project's packages, by symlink. The bootstrap runs `npm ci` when package-lock.json is newer than the
    // installed lock, which through the link would reinstall the project's own node_modules: the clone's is older.
    symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    utimesSync(path.join(clone, 'package-lock.json'), new Date(0), new Date(0));
    // The Go-built tools (minutes to build) by symlink; the clone's cache itself is private, below the 0700 folder.
    const cacheBin = labPaths().cacheBin;
    mkdirSync(path.join(clone, '.cache', 'bin'), { recursive: true });
    for (const file of ['temporal', 'temporal.version', 'wal-g', 'wal-g.version', 'storage-lab-volume', 'storage-lab-volume.version'])
      symlinkSync(path.join(cacheBin, file), path.join(clone, '.cache', 'bin', file));
    // The build, copied: the bootstrap, most of it tsc over the whole tree, took 232 of this test's 359 s on a loaded
    // machine, and where the clone lives changes nothing in the build. Its marker newer than every checked-out source, so
    // the bootstrap finds dist/ up to date.
    cpSync(path.join(PROJECT_ROOT, 'dist'), path.join(clone, 'dist'), { recursive: true });
    const built = new Date(Date.now() + 1000);
    utimesSync(path.join(clone, 'dist', '.tsbuildinfo'), built, built);
    // The clone's own defaults: no lab home, hosts folder, cache or server folder of the suite's.
    env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(STORAGE_LAB_|TEMPORAL_)/.test(name)));
    Object.assign(env, { TEMPORAL_ADDRESS: `127.0.0.1:${await freePortBlock(DEV_PORT_OFFSETS)}`, STORAGE_LAB_UI_PORT: String(await freePort()) });
    hostsDir = labPaths({ STORAGE_LAB_HOME: path.join(clone, '.lab') }).hostsDir;
  });

  afterAll(async () => {
    if (clone && existsSync(path.join(clone, 'dist/client/cli.js'))) {
      // A run that failed half way leaves hosts: the sweeper removes those of finished runs, then the services stop.
      if (hostsDir && existsSync(hostsDir) && readdirSync(hostsDir).length) await storageLab(['sweep']).catch(() => undefined);
      await storageLab(['dev', 'down']).catch(() => undefined);
    }
    if (hostsDir) for (const p of [hostsDir, backupsDirFor(hostsDir, {}), hostsKeyFile(hostsDir)]) rmSync(p, { recursive: true, force: true });
    if (privateDir) rmSync(privateDir, { recursive: true, force: true });
    console.log(`private clone: ${timings.join(', ')}`);
  });

  it('bootstraps, dry-runs local-quick and runs a small experiment on PostgreSQL 17 with WAL-G from there', async () => {
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);
    // The premise: the lab's default hosts folder for this clone is outside it.
    expect(hostsDir).toMatch(/^\/var\/lib\/storage-lab\/hosts-[0-9a-f]{8}$/);
    expect(existsSync(hostsDir)).toBe(false);

    const bootstrap = await timed('bootstrap', () =>
      runProcess('bash', ['infra/bootstrap.sh', 'demo'], { cwd: clone, env, timeoutMs: 600_000, okExitCodes: [0, 1, 2] }),
    );
    expect({ exitCode: bootstrap.exitCode, stderr: bootstrap.stderr.slice(-2000) }).toEqual({ exitCode: 0, stderr: expect.any(String) });
    expect(bootstrap.stderr).not.toContain('installing npm packages');
    // PostgreSQL 17's servers where the postgres user reaches them, none in the private cache.
    expect(existsSync(path.join(SHARED_POSTGRES_ROOT, '17', 'bin', 'postgres'))).toBe(true);
    expect(existsSync(path.join(clone, '.cache', 'postgresql'))).toBe(false);
    // A stale private copy (a clone bootstrapped before the shared folder) must be passed over, not run.
    mkdirSync(path.join(clone, '.cache', 'postgresql'));
    symlinkSync(path.join(SHARED_POSTGRES_ROOT, '17'), path.join(clone, '.cache', 'postgresql', '17'));

    const dry = await timed('dry run', () => storageLab(['run', '--preset', 'local-quick', '--dry-run']));
    expect({ exitCode: dry.exitCode, stderr: dry.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(dry.stdout).toContain('Dry run: nothing was created.');

    const up = await timed('dev up', () => storageLab(['dev', 'up']));
    expect({ exitCode: up.exitCode, stderr: up.stderr }).toEqual({ exitCode: 0, stderr: '' });

    const runId = 'private-clone-run';
    const run = await timed('run', () =>
      storageLab([
        'run', '--preset', 'ci', '--id', runId, '--watch',
        '--set', 'postgres.version=17',
        '--set', 'durability.enabled=true',
        '--set', 'phases.vacuum.enabled=false',
        '--set', 'phases.backlog.enabled=false',
      ]),
    );
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(run.stdout).toContain(`Run ${runId}: completed`);
    const result = JSON.parse(readFileSync(path.join(clone, '.lab', 'results', runId, 'result.json'), 'utf8'));
    expect(result.status).toBe('completed');
    const versions = JSON.stringify(result).match(/"postgresVersion":"[^"]*"/g) ?? [];
    expect(versions.length).toBeGreaterThan(0);
    for (const v of versions) expect(v).toMatch(/"postgresVersion":"17\./);
    // The hosts lived outside the clone and were torn down; the clone's home holds no hosts folder.
    expect(existsSync(hostsDir)).toBe(true);
    expect(readdirSync(hostsDir)).toEqual([]);
    expect(existsSync(path.join(clone, '.lab', 'hosts'))).toBe(false);
  });
});
