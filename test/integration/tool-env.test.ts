/**
 * What a tool and a host agent inherit: an allow-list, never the worker's whole environment (AWS keys, PGPASSWORD,
 * Temporal API keys and tokens stay in the worker). The tool is the real `env`, run through the lab's runner.
 */
import { libpqEnv } from '../../lib/pg';
import { runProcess, toolEnv } from '../../lib/process-runner';
import { hostAgentEnv } from '../../infra/agent-env';
import { lookupUser } from '../../lib/postgres-binaries';

const SECRETS = {
  PGPASSWORD: 'pg-secret',
  AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  TEMPORAL_API_KEY: 'temporal-secret',
  GITHUB_TOKEN: 'gh-secret',
  STORAGE_LAB_AWS_BUCKET: 'results-bucket',
};

/** `env` run through the runner, as a name → value record. */
async function envOfTool(opts: Parameters<typeof runProcess>[2] = {}): Promise<Record<string, string>> {
  const r = await runProcess('env', [], opts);
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

describe('the environment of a tool', () => {
  const saved = { ...process.env };
  beforeAll(() => Object.assign(process.env, SECRETS, { LC_ALL: 'C.UTF-8', TZ: 'UTC' }));
  afterAll(() => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  });

  it('is the path, the locale and the time zone, and the HOME of the user it runs as', async () => {
    const env = await envOfTool();
    for (const name of Object.keys(SECRETS)) expect(env).not.toHaveProperty(name);
    expect(env.PATH).toBe(process.env.PATH);
    expect(env).toMatchObject({ LC_ALL: 'C.UTF-8', TZ: 'UTC' });
    expect(Object.keys(env).sort()).toEqual([...Object.keys(toolEnv()), 'HOME'].sort());
  });

  it("gets its own user's HOME when it runs as another user, never the worker's", async () => {
    const nobody = lookupUser('nobody');
    if (process.getuid?.() !== 0 || !nobody) return; // Only root runs tools as other users.
    const env = await envOfTool({ uid: nobody.uid, gid: nobody.gid });
    expect(env.HOME).toBe('/nonexistent');
    expect(env).not.toHaveProperty('PGPASSWORD');
  });

  it("of a libpq tool adds the host's socket and role, and nothing of the worker's", async () => {
    const env = await envOfTool({ env: libpqEnv({ socketDir: '/h/run', postgres: { host: '127.0.0.1', port: 5433 } }) });
    expect(env).toMatchObject({ PGHOST: '/h/run', PGPORT: '5433', PGUSER: 'lab', PGDATABASE: 'bench' });
    for (const name of Object.keys(SECRETS)) expect(env).not.toHaveProperty(name);
  });
});

describe('the environment of a host agent', () => {
  const parent = {
    ...SECRETS,
    PATH: '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: '/root',
    TEMPORAL_ADDRESS: '10.0.0.1:7233',
    TEMPORAL_TLS_CERT: '/etc/lab/client.crt',
    TEMPORAL_TLS_KEY: '/etc/lab/client.key',
    STORAGE_LAB_CACHE: '/opt/lab-cache',
    STORAGE_LAB_CLIENT_USER: 'storage-lab',
    PGBACKREST_REPO1_S3_KEY_SECRET: 'pgbr-secret',
  };

  it("is the Temporal connection settings, the lab settings it reads, the path and locale; no keys without S3 backups", () => {
    const env = hostAgentEnv(parent, { TEMPORAL_ADDRESS: '127.0.0.1:7233', TEMPORAL_NAMESPACE: 'default' }, { s3Backups: false });
    expect(env).toEqual({
      PATH: '/usr/bin:/bin',
      LANG: 'C.UTF-8',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TLS_CERT: '/etc/lab/client.crt',
      TEMPORAL_TLS_KEY: '/etc/lab/client.key',
      STORAGE_LAB_CACHE: '/opt/lab-cache',
      STORAGE_LAB_CLIENT_USER: 'storage-lab',
    });
  });

  it("gets the S3 keys (and only those secrets) for a host whose backups go to S3", () => {
    const env = hostAgentEnv(parent, {}, { s3Backups: true });
    expect(env).toMatchObject({ AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 'aws-secret', PGBACKREST_REPO1_S3_KEY_SECRET: 'pgbr-secret' });
    for (const name of ['PGPASSWORD', 'TEMPORAL_API_KEY', 'GITHUB_TOKEN', 'STORAGE_LAB_AWS_BUCKET', 'HOME']) expect(env).not.toHaveProperty(name);
  });
});
