/**
 * What a run on AWS is made of before any API call: the host bootstrap (rendered user-data), the host.json it
 * writes, the control worker's AWS settings, the spec fields a real run needs, and the CLI's dry run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findWalg } from '../../lib/walg';
import { awsProvider } from '../../common/providers/aws';
import { resolveSpec } from '../../common/input/resolve';
import { completeHostConfig } from '../../infra/providers/aws/host-config';
import { readUserDataTemplate, renderUserData, shellQuote, USER_DATA_LIMIT_BYTES, type UserDataValues } from '../../infra/providers/aws/user-data';
import { hostAgentRoots, PROJECT_ROOT } from '../../lib/lab-paths';
import { clientToken, hostBase } from '../../infra/providers/aws/ec2-provider';
import { awsPolicyFromEnv, DEFAULT_AWS_POLICY } from '../../infra/providers/aws/policy';
import { awsEnv } from '../../worker/aws-setup';

const values = (over: Partial<UserDataValues> = {}): UserDataValues => ({
  HOST_ID: 'abc1234-gp3-0',
  STORAGE_KIND: 'ebs',
  POSTGRES_VERSION: '16',
  NODE_VERSION: '20.20.2',
  AGENT_S3_URI: 's3://bucket/storage-lab/agent/storage-lab-agent-0123.tgz',
  AGENT_SHA256: 'f'.repeat(64),
  WALG_S3_URI: 's3://bucket/storage-lab/agent/wal-g-3.0.8-linux-x64-0123',
  WALG_SHA256: 'e'.repeat(64),
  WALG_ARCH: 'x64',
  AWS_REGION: 'us-east-1',
  AWS_ENDPOINT_URL: '',
  TEMPORAL_ADDRESS: 'lab.a1b2c.tmprl.cloud:7233',
  TEMPORAL_NAMESPACE: 'lab.a1b2c',
  TEMPORAL_API_KEY_PARAMETER: '/storage-lab/temporal-api-key',
  TEMPORAL_TLS_CERT_PARAMETER: '',
  TEMPORAL_TLS_KEY_PARAMETER: '',
  DATABASE_PASSWORD_PARAMETER: '',
  HOST_BASE_JSON: JSON.stringify({ hostId: "it's-quoted" }),
  ...over,
});

describe('host bootstrap (user-data)', () => {
  const template = readUserDataTemplate();

  it('renders every placeholder as one shell word and stays valid bash under the EC2 size limit', () => {
    const text = renderUserData(template, values());
    expect(text).not.toMatch(/\{\{[A-Z_]+\}\}/);
    expect(text).toContain("TEMPORAL_ADDRESS='lab.a1b2c.tmprl.cloud:7233'");
    expect(text).toContain(`HOST_BASE_JSON='{"hostId":"it'\\''s-quoted"}'`);
    expect(Buffer.byteLength(text)).toBeLessThan(USER_DATA_LIMIT_BYTES);
    execFileSync('bash', ['-n'], { input: text });
    // The values come back out of the shell exactly as they went in.
    const echoed = execFileSync('bash', ['-c', `${text.split('\napp=')[0]}\nprintf '%s' "$HOST_BASE_JSON"`]).toString();
    expect(echoed).toBe(`{"hostId":"it's-quoted"}`);
  });

  it('installs what a host needs and runs the agent under systemd, reading secrets by name only', () => {
    const text = renderUserData(template, values());
    expect(text).toMatch(/apt\.postgresql\.org/);
    expect(text).toContain('pgbackrest');
    expect(text).toContain('Amazon EC2 NVMe Instance Storage');
    expect(text).toContain('Amazon Elastic Block Store');
    expect(text).toContain('Restart=always');
    expect(text).toContain('ssm get-parameter --with-decryption');
    expect(text).toMatch(/sha256sum -c/);
    expect(text).toContain("WALG_S3_URI='s3://bucket/storage-lab/agent/wal-g-3.0.8-linux-x64-0123'");
    expect(text).toContain('install_walg /usr/local/bin');
    // As locally: the agent is root (it runs Postgres as postgres), the workload's tools the unprivileged storage-lab.
    expect(text).toMatch(/useradd --system .* storage-lab/);
    const unit = text.slice(text.indexOf('[Service]'), text.indexOf('[Install]'));
    expect(unit).not.toMatch(/^User=/m);
  });

  describe('installs the control worker\'s WAL-G only as shipped', () => {
    const walg = findWalg();
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-walg-install-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** Runs the rendered script's own install_walg in bash, its S3 copy served from the local binary. */
    function install(over: Partial<UserDataValues>, nodeArch = 'x64') {
      const text = renderUserData(template, values(over));
      const fn = /^install_walg\(\) \{\n[\s\S]*?^\}$/m.exec(text)![0];
      const header = text.split('\napp=')[0];
      const target = mkdtempSync(path.join(dir, 'bin-'));
      const work = mkdtempSync(path.join(dir, 'work-'));
      const script = [
        header,
        'step() { echo "$*"; }',
        // aws s3 cp <uri> <file>: the shipped binary, as S3 would serve it.
        `aws_() { cp ${shellQuote(walg!)} "\${@: -1}"; }`,
        `work=${shellQuote(work)}; node_arch=${nodeArch}`,
        fn,
        `install_walg ${shellQuote(target)}`,
      ].join('\n');
      const r = spawnSync('bash', ['-c', script], { encoding: 'utf8' });
      return { ...r, installed: existsSync(path.join(target, 'wal-g')) ? path.join(target, 'wal-g') : null };
    }

    it('checks the sha256 and installs it runnable', () => {
      expect(walg).not.toBeNull();
      const sha256 = createHash('sha256').update(readFileSync(walg!)).digest('hex');
      const ok = install({ WALG_SHA256: sha256 });
      expect(ok.status).toBe(0);
      expect(ok.stdout).toMatch(/installed wal-g version v3\.0\.8 as \S+\/wal-g/);
      expect(statSync(ok.installed!).mode & 0o777).toBe(0o755);
      expect(execFileSync(ok.installed!, ['--version']).toString()).toMatch(/^wal-g version v3\.0\.8\t/);
    });

    it('refuses a binary whose sha256 differs, and one built for another CPU; without one it says so', () => {
      const bad = install({ WALG_SHA256: '0'.repeat(64) });
      expect(bad.status).not.toBe(0);
      expect(bad.installed).toBeNull();
      const arm = install({ WALG_SHA256: '0'.repeat(64) }, 'arm64');
      expect(arm.status).toBe(0);
      expect(arm.stdout).toContain('WAL-G was built for x64 and this host is arm64: not installed');
      expect(arm.installed).toBeNull();
      const none = install({ WALG_S3_URI: '', WALG_SHA256: '', WALG_ARCH: '' });
      expect(none.status).toBe(0);
      expect(none.stdout).toContain('no WAL-G from the control worker');
      expect(none.installed).toBeNull();
    });
  });

  it('refuses a template and values that do not match, and a script too big for EC2', () => {
    expect(() => renderUserData('echo {{NOPE}}', values())).toThrow('no value for {{NOPE}}');
    expect(() => renderUserData('echo {{HOST_ID}}', values())).toThrow(/values without a placeholder: STORAGE_KIND/);
    expect(() => renderUserData(template, values({ HOST_BASE_JSON: 'x'.repeat(USER_DATA_LIMIT_BYTES) }))).toThrow(/at most 16384/);
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
    // A line break would add a line of its own to agent.env; the spec's patterns refuse it, and so does the render.
    expect(() => renderUserData(template, values({ TEMPORAL_ADDRESS: 'lab:7233\nTEMPORAL_API_KEY_FILE=/etc/shadow' }))).toThrow(
      '{{TEMPORAL_ADDRESS}} holds a control character',
    );
  });
});

describe('host.json of an EC2 host', () => {
  const spec = resolveSpec({ preset: 'seed-full' });
  const req = {
    runId: 'exp-1',
    hostId: 'abc1234-gp3-0',
    experiment: 'seed-full',
    className: 'gp3',
    storageClass: spec.storageClasses.gp3,
    memoryLimitMiB: 65536,
    instanceType: 'm6id.4xlarge',
    volumeBytes: 1e9,
    expiresAt: '2026-03-02T00:00:00Z',
  };

  it('is known at launch but for the address, instance, device and binaries, which the host adds at boot', () => {
    const base = hostBase(req);
    expect(base).toMatchObject({ provider: 'aws', taskQueue: 'host:abc1234-gp3-0', osUser: 'postgres', cgroup: null, limits: { iops: 3000, throughputMiBps: 125 } });
    const full = completeHostConfig(base, { privateIp: '10.0.1.7', instanceId: 'i-0abc', device: 'nvme1n1', pgBinDir: '/usr/lib/postgresql/16/bin' });
    expect(full).toMatchObject({ postgres: { host: '10.0.1.7', port: 5432 }, instanceId: 'i-0abc', device: 'nvme1n1', pgBinDir: '/usr/lib/postgresql/16/bin' });
    // The agent may write its data folder too: on EC2 it is the data device's mount, outside the host folder.
    expect(hostAgentRoots(full)).toEqual(expect.arrayContaining([full.hostDir, path.dirname(full.dataDir)]));
    expect(full.dataDir.startsWith(`${full.hostDir}/`)).toBe(false);
    expect(() => completeHostConfig(base, { privateIp: '', instanceId: 'i', device: null, pgBinDir: '/x' })).toThrow('not an IPv4 address');
  });

  it('gets a ClientToken that is stable per (run, host), distinct per host and purpose, and at most 64 characters', () => {
    const t = clientToken('exp-1', 'h-0');
    expect(t).toBe(clientToken('exp-1', 'h-0'));
    expect(t).not.toBe(clientToken('exp-1', 'h-1'));
    expect(t).not.toBe(clientToken('exp-1', 'h-0', 'data-volume'));
    expect(clientToken('x'.repeat(500), 'y'.repeat(100)).length).toBeLessThanOrEqual(64);
  });
});

describe('AWS settings', () => {
  it('reads the control worker environment and names what is missing', () => {
    expect(awsEnv({})).toBeNull();
    expect(() => awsEnv({ STORAGE_LAB_AWS: '1' })).toThrow(/STORAGE_LAB_AWS_BUCKET/);
    expect(() => awsEnv({ STORAGE_LAB_AWS: 'yes' })).toThrow(/must be 1/);
    expect(() => awsEnv({ STORAGE_LAB_AWS: '1', STORAGE_LAB_AWS_BUCKET: 'b', STORAGE_LAB_AWS_ENDPOINT: 'localhost' })).toThrow(/URL/);
    expect(awsEnv({ STORAGE_LAB_AWS: '1', STORAGE_LAB_AWS_BUCKET: 'b', AWS_REGION: 'eu-west-1', STORAGE_LAB_RESULTS_PREFIX: '/lab/results/' })).toEqual({
      region: 'eu-west-1',
      endpoint: undefined,
      bucket: 'b',
      resultsPrefix: 'lab/results',
      kmsKeyId: undefined,
      policy: DEFAULT_AWS_POLICY,
    });
  });

  it("reads the operator's rules for runs: image owners, cost ceiling, prices, the hosts' Temporal address", () => {
    expect(awsPolicyFromEnv({})).toEqual({ imageOwners: ['136693071363'], maxCostUsd: 100, hourlyPriceUsd: { 'm6id.4xlarge': 0.9492 } });
    expect(
      awsPolicyFromEnv({
        STORAGE_LAB_AWS_IMAGE_OWNERS: ' 136693071363, amazon ,123456789012',
        STORAGE_LAB_AWS_MAX_COST_USD: '250.5',
        STORAGE_LAB_AWS_HOURLY_PRICES: 'm6id.4xlarge=0.9492,m6id.8xlarge=1.8984',
        STORAGE_LAB_AWS_TEMPORAL_ADDRESS: 'lab.a1b2c.tmprl.cloud:7233',
      }),
    ).toEqual({
      imageOwners: ['136693071363', 'amazon', '123456789012'],
      maxCostUsd: 250.5,
      hourlyPriceUsd: { 'm6id.4xlarge': 0.9492, 'm6id.8xlarge': 1.8984 },
      temporalAddress: 'lab.a1b2c.tmprl.cloud:7233',
    });
    expect(() => awsPolicyFromEnv({ STORAGE_LAB_AWS_IMAGE_OWNERS: '1366930713' })).toThrow(/STORAGE_LAB_AWS_IMAGE_OWNERS: "1366930713" is not an account id/);
    expect(() => awsPolicyFromEnv({ STORAGE_LAB_AWS_IMAGE_OWNERS: 'amazon;x' })).toThrow(/STORAGE_LAB_AWS_IMAGE_OWNERS/);
    for (const bad of ['0', '-5', 'lots', '1e9']) expect(() => awsPolicyFromEnv({ STORAGE_LAB_AWS_MAX_COST_USD: bad })).toThrow(/STORAGE_LAB_AWS_MAX_COST_USD must be a number/);
    for (const bad of ['m6id.4xlarge', 'm6id.4xlarge=0', 'M6ID=1', 'm6id.4xlarge=x'])
      expect(() => awsPolicyFromEnv({ STORAGE_LAB_AWS_HOURLY_PRICES: bad })).toThrow(/STORAGE_LAB_AWS_HOURLY_PRICES: .* is not type=USD per hour/);
    expect(() => awsPolicyFromEnv({ STORAGE_LAB_AWS_TEMPORAL_ADDRESS: 'https://x:7233' })).toThrow(/STORAGE_LAB_AWS_TEMPORAL_ADDRESS must be host:port/);
  });

  it('lists the spec fields a real run on AWS needs', () => {
    expect(awsProvider.runProblemsOf(resolveSpec({ preset: 'ci' }))).toEqual([]);
    const missing = awsProvider.runProblemsOf(resolveSpec({ preset: 'seed-full' })).map((p) => p.path);
    expect(missing).toEqual(['aws.subnetId', 'aws.instanceProfileName', 'aws.temporalAddress']);
    const ok = resolveSpec({
      preset: 'seed-full',
      aws: { subnetId: 'subnet-0abc1234def567890', instanceProfileName: 'p', temporalAddress: 'a:7233', temporalTlsCertParameter: '/c' },
    });
    expect(awsProvider.runProblemsOf(ok).map((p) => p.path)).toEqual(['aws.temporalTlsKeyParameter']);
  });
});

describe('storage-lab run --preset seed-full --dry-run', () => {
  it('prints the plan and the cost estimate, creates nothing, and exits 0 without any AWS or Temporal access', () => {
    const cli = path.join(PROJECT_ROOT, 'dist', 'client', 'cli.js');
    // An unreachable Temporal address proves the dry run never connects.
    const drills = ['--set', 'durability.drills=["restore","failover"]', '--set', 'durability.backupStore.kind=s3', '--set', 'durability.backupStore.bucket=lab-backups'];
    const out = spawnSync(process.execPath, [cli, 'run', '--preset', 'seed-full', ...drills, '--dry-run'], {
      encoding: 'utf8',
      env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    });
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/8 hosts, 8 at a time/);
    expect(out.stdout).toMatch(/nvme-3 +nvme +m6id\.4xlarge +instance-store NVMe/);
    expect(out.stdout).toMatch(/gp3-0 +gp3 +m6id\.4xlarge +685 GiB gp3 EBS at 3000 IOPS \/ 125 MiB\/s/);
    // Every phase with the bound that ends it when it hangs, the drills' too, derived from the data size.
    expect(out.stdout).toMatch(/steps per host:\n {4}provision; the agent starts \(bound 15 min\)\n[\s\S]*load scale 33000 \(3,300,000,000 rows, 16 writers\) \(bound \d+ h\)[\s\S]*teardown/);
    expect(out.stdout).toMatch(/restore drill: load scale 33000 with 16 writers \(bound \d+ h\), base backup and restore with wal-g \(bound \d+ (h|min) each\)/);
    expect(out.stdout).toMatch(/failover drill: 1 round of kill -9 and promotion/);
    expect(out.stdout).toMatch(/Estimated cost: \$\d+\.\d\d for [\d.]+ host-hours/);
    // Data sets in the S3 store (issue 31): 1 load and 7 restores, each with its time, and the set's S3 storage priced.
    expect(out.stdout).toMatch(/gp3-0 +restore +~\d+ (h|min) \(after ~\d+ h waiting for the publish\)/);
    expect(out.stdout).toMatch(/nvme-0 +load \+ publish +~\d+ h/);
    expect(out.stdout).toMatch(/1 load and 7 restores, \d+ h of preparation host time .*0 loads and 8 restores, \d+ h; every host loading its own: 8 loads, \d+ h/);
    expect(out.stdout).toContain('s3://lab-backups/storage-lab/backups/_datasets/ for 7 days');
    expect(out.stdout).toMatch(/no hydration and no Fast Snapshot Restore/);
    expect(out.stdout).toMatch(/S3: the data set, 516 GiB .* kept 7 days: [\d.]+ GiB-months x \$0\.023 = \$\d+\.\d\d/);
    expect(out.stdout).toContain('aws.subnetId');
    expect(out.stdout).toContain('Dry run: nothing was created.');
  });

  it('refuses a real run that lacks the AWS fields, before connecting anywhere', () => {
    const cli = path.join(PROJECT_ROOT, 'dist', 'client', 'cli.js');
    const out = spawnSync(process.execPath, [cli, 'run', '--preset', 'seed-full'], { encoding: 'utf8', env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' } });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/aws\.subnetId[\s\S]*aws\.instanceProfileName[\s\S]*aws\.temporalAddress/);
  });
});
