/**
 * Every spec field that reaches a cloud API, a configuration file or a host's user-data is checked by its pattern:
 * good values pass, hostile ones (a newline, a path, a scheme, "..", an absolute folder) are refused on their field
 * with the expected form, in the experiment spec and both drills.
 */
import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { resolveSpec } from '../../common/input/resolve';
import { AMI_ID, ENDPOINT_URL, HOST_AND_PORT, S3_BUCKET, SAFE_RELATIVE_PATH } from '../../common/input/fields';
import { problemsOf } from '../helpers/spec-problems';

/** Sets one dotted path (below the preset) in an input. */
function inputWith(base: Record<string, unknown>, dotted: string, value: unknown): Record<string, unknown> {
  const keys = dotted.split('.');
  const out: Record<string, unknown> = { ...base };
  let node = out;
  for (const key of keys.slice(0, -1)) {
    node[key] = { ...((node[key] as Record<string, unknown>) ?? {}) };
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]] = value;
  return out;
}

interface FieldCase {
  field: string;
  /** A piece of the expected form every refusal must show. */
  form: string;
  good: unknown[];
  bad: unknown[];
  /** What the value sits under in the input (an S3 store needs its kind). */
  base?: Record<string, unknown>;
}

const NEWLINE = 'x\nrepo1-path=/etc';

const FIELDS: FieldCase[] = [
  {
    field: 'aws.imageId',
    form: 'an AMI id',
    good: ['ami-0abcdef1234567890', 'ami-03cf127a'],
    bad: ['ami-0abc/../../x', 'ami-0abcdef1234567890\n', 'AMI-0ABCDEF1234567890', 'ami-12345', 'ami-0abcdef1234567890; rm -rf /', ''],
  },
  {
    field: 'host.instanceType',
    form: 'an EC2 instance type',
    good: ['m6id.4xlarge', 'u7in-32tb.224xlarge', 'c7i-flex.large', 'mac2-m2pro.metal'],
    bad: ['m6id', 'm6id.4xlarge\nTEMPORAL_ADDRESS=evil:1', 'M6ID.4XLARGE', 'm6id.4xlarge x', '../m6id.4xlarge', ''],
  },
  {
    field: 'aws.temporalAddress',
    form: 'host:port',
    good: ['my-ns.a1b2c.tmprl.cloud:7233', '10.0.0.5:7233', 'temporal:7233', '[fd00::1]:7233'],
    bad: ['https://my-ns.tmprl.cloud:7233', 'my-ns.tmprl.cloud', 'host:0', 'host:65536', 'host:7233/path', 'host:7233\nX=1', 'a b:7233', 'user@host:7233'],
  },
  {
    field: 'aws.endpoint',
    form: 'an https:// URL',
    good: ['https://s3.us-east-1.amazonaws.com', 'https://minio.internal:9000', 'http://127.0.0.1:5000', 'http://localhost:4566/', 'http://[::1]:9000'],
    bad: ['http://s3.example.com', 'https://s3.example.com/bucket', 'https://user:pw@s3.example.com', 'ftp://x', 'https://s3.example.com?x=1', 'http://127.0.0.1.evil.com', 'https://x\n'],
  },
  {
    field: 'aws.subnetId',
    form: 'a subnet id',
    good: ['subnet-0abc1234def567890', 'subnet-1a2b3c4d'],
    bad: ['subnet-1', 'subnet-0abc1234def567890\n', 'sg-0abc1234def567890', 'subnet-0ABC1234DEF567890'],
  },
  {
    field: 'aws.securityGroupIds',
    form: 'a security group id',
    good: [['sg-0abc1234def567890', 'sg-1a2b3c4d']],
    bad: [['sg-1'], ['sg-0abc1234def567890', 'default'], ['sg-1a2b3c4d\n']],
  },
  {
    field: 'aws.instanceProfileName',
    form: 'an IAM instance profile name',
    good: ['storage-lab-host', 'Lab_Host+1=a,b.c@d'],
    bad: ['storage lab', 'arn:aws:iam::123456789012:instance-profile/x', 'p\n', 'x'.repeat(129)],
  },
  {
    field: 'aws.imageSsmParameter',
    form: 'a public SSM parameter under /aws/service/',
    good: ['/aws/service/debian/release/12/latest/amd64', '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64'],
    bad: ['/storage-lab/db-password', 'aws/service/debian/release/12/latest/amd64', '/aws/service/debian\n', '/aws/service//x', '/aws/service/a b'],
  },
  {
    field: 'aws.temporalApiKeyParameter',
    form: 'an SSM parameter name',
    good: ['/storage-lab/temporal-api-key', 'storage-lab.key_1'],
    bad: ['/storage-lab/key\n', '/storage lab/key', '/storage-lab//key', '/a;b', 'x'.repeat(1012)],
  },
  {
    field: 'aws.databasePasswordParameter',
    form: 'an SSM parameter name',
    good: ['/storage-lab/db-password'],
    bad: ['/storage-lab/db-password\nexport X=1', "/storage-lab/'pw'"],
  },
  {
    field: 'aws.resultsBucket',
    form: 'an S3 bucket name',
    good: ['storage-lab-test', 'lab.results.1', 'abc'],
    bad: ['lab\nbucket', 'Lab-Results', 'ab', 'x'.repeat(64), 'lab..results', '192.168.1.1', 'xn--lab', 'lab-s3alias', '-lab', 'lab_results'],
  },
  {
    field: 'aws.resultsPrefix',
    form: 'a key prefix',
    good: ['storage-lab/results', 'a', 'team.a/run_1'],
    bad: ['../results', 'a/../b', 'a//b', '/abs', 'a/', 'a/./b', 'a\nb', 'a b', ''],
  },
  {
    field: 'aws.region',
    form: 'an AWS region',
    good: ['us-east-1', 'eu-central-2', 'us-gov-west-1', 'ap-southeast-5'],
    bad: ['us-east-1\n', 'US-EAST-1', 'useast1', 'us-east-1a', 'us-east-1/../x'],
  },
  {
    field: 'aws.temporalNamespace',
    form: 'a Temporal namespace',
    good: ['default', 'my-ns.a1b2c', 'lab_1'],
    bad: ['default\nX=1', 'my ns', '.hidden', '', 'a/b'],
  },
  {
    field: 'durability.backupStore.bucket',
    form: 'an S3 bucket name',
    base: { durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } },
    good: ['lab-backups'],
    bad: ['lab-backups\nrepo1-path=/etc', 'a', 'Lab'],
  },
  {
    field: 'durability.backupStore.prefix',
    form: 'a key prefix',
    base: { durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } },
    good: ['storage-lab/backups', 'team-a'],
    bad: ['storage-lab/../..', '../x', 'a//b', `storage-lab${NEWLINE}`, '/x'],
  },
  {
    field: 'durability.backupStore.region',
    form: 'an AWS region',
    base: { durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } },
    good: ['eu-west-1'],
    bad: ['eu-west-1\nrepo1-s3-endpoint=evil', 'eu west 1'],
  },
  {
    field: 'durability.backupStore.endpoint',
    form: 'an https:// URL',
    base: { durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } },
    good: ['https://minio.internal:9000', 'http://127.0.0.1:9000'],
    bad: ['http://minio.internal:9000', 'https://minio.internal:9000\nrepo1-path=/', 'https://minio.internal/path'],
  },
  {
    field: 'durability.backupStore.path',
    form: "the lab's backups folder (STORAGE_LAB_BACKUPS_DIR)",
    base: { durability: { backupStore: { kind: 'folder' } } },
    good: ['drills', 'team-a/drills.2026', 'a_b'],
    bad: ['/etc', '/var/lib/postgresql', '../outside', 'a/../../b', 'a//b', '.', 'a/.', `a${NEWLINE}`, 'a b', 'x'.repeat(256)],
  },
];

const awsBase = { aws: { region: 'us-east-1' } };

describe('spec field patterns', () => {
  it.each(FIELDS.flatMap((f) => f.good.map((value) => [f.field, value] as const)))('accepts %s = %j', (field, value) => {
    const c = FIELDS.find((f) => f.field === field)!;
    const input = inputWith({ preset: 'ci', ...awsBase, ...(c.base ?? {}) }, field, value);
    expect(problemsOf(resolveSpec, input)).toEqual([]);
  });

  it.each(FIELDS.flatMap((f) => f.bad.map((value) => [f.field, value] as const)))('refuses %s = %j naming the field and the expected form', (field, value) => {
    const c = FIELDS.find((f) => f.field === field)!;
    const input = inputWith({ preset: 'ci', ...awsBase, ...(c.base ?? {}) }, field, value);
    const problems = problemsOf(resolveSpec, input);
    expect(problems.length).toBeGreaterThanOrEqual(1);
    for (const p of problems) {
      expect(p.path.startsWith(field)).toBe(true);
      expect(p.message).toContain(c.form);
    }
  });

  it('says why an absolute folder store is refused and what to give instead', () => {
    const [problem] = problemsOf(resolveSpec, { preset: 'ci', durability: { backupStore: { kind: 'folder', path: '/etc' } } });
    expect(problem).toEqual({
      path: 'durability.backupStore.path',
      message: expect.stringContaining("an absolute folder is refused: backups stay below the lab's backups folder (STORAGE_LAB_BACKUPS_DIR); give a sub-folder of it"),
    });
  });

  it('says a control character is the problem when there is one', () => {
    const [problem] = problemsOf(resolveSpec, { preset: 'ci', aws: { resultsBucket: 'lab\nbucket' } });
    expect(problem).toEqual({ path: 'aws.resultsBucket', message: expect.stringContaining('must not contain a control character') });
  });

  it('checks the drills\' stores, hosts and AWS sections with the same patterns', () => {
    const store = (over: Record<string, unknown>) => ({ preset: 'ci', backup: { store: over } });
    expect(problemsOf(resolveRestoreDrill, store({ kind: 'folder', path: '/var/lib' }))[0].path).toBe('backup.store.path');
    expect(problemsOf(resolveFailoverDrill, store({ kind: 's3', bucket: 'lab\nx' }))[0].path).toBe('backup.store.bucket');
    expect(problemsOf(resolveRestoreDrill, store({ kind: 's3', bucket: 'lab', prefix: '../../x' }))[0].path).toBe('backup.store.prefix');
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', host: { instanceType: 'm6id.4xlarge;x' } })[0].path).toBe('host.instanceType');
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', aws: { temporalAddress: 'grpc://x:1' } })[0].path).toBe('aws.temporalAddress');
    expect(problemsOf(resolveRestoreDrill, store({ kind: 's3', bucket: 'lab-backups', endpoint: 'http://127.0.0.1:9000' }))).toEqual([]);
    expect(problemsOf(resolveRestoreDrill, store({ kind: 'folder', path: 'team-a/drills' }))).toEqual([]);
  });

  it('keeps pgBackRest on https: loopback http is for WAL-G (and moto) only', () => {
    const [problem] = problemsOf(resolveRestoreDrill, {
      preset: 'ci',
      backup: { tool: 'pgbackrest', store: { kind: 's3', bucket: 'lab-backups', endpoint: 'http://127.0.0.1:9000' } },
    });
    expect(problem).toEqual({ path: 'backup.store.endpoint', message: expect.stringContaining('pgBackRest talks to S3 over TLS only') });
  });

  it('refuses a price table keyed by anything but an instance type, and negative or absurd prices', () => {
    // A key with a line break is quoted in the message, so the message stays one line per problem.
    expect(problemsOf(resolveSpec, { preset: 'ci', aws: { hourlyPriceUsd: { 'm6id.4xlarge\nx': 1 } } })[0]).toEqual({
      path: 'aws.hourlyPriceUsd."m6id.4xlarge\\nx"',
      message: expect.stringContaining('an EC2 instance type'),
    });
    expect(problemsOf(resolveSpec, { preset: 'ci', aws: { hourlyPriceUsd: { 'm6id.4xlarge': -1 } } })[0].path).toBe('aws.hourlyPriceUsd.m6id.4xlarge');
    expect(problemsOf(resolveSpec, { preset: 'ci', aws: { hourlyPriceUsd: { 'm6id.4xlarge': 1e6 } } })[0].message).toContain('at most 1000');
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`m${i}.large`, 1]));
    expect(problemsOf(resolveSpec, { preset: 'ci', aws: { hourlyPriceUsd: many } })[0]).toEqual({ path: 'aws.hourlyPriceUsd', message: 'must list at most 64 instance types' });
  });

  it('patterns hold no line break, whatever the field', () => {
    for (const pattern of [AMI_ID, HOST_AND_PORT, ENDPOINT_URL, S3_BUCKET, SAFE_RELATIVE_PATH]) {
      expect(pattern.flags).not.toContain('m');
      expect(pattern.flags).not.toContain('s');
    }
    expect(SAFE_RELATIVE_PATH.test('a\n')).toBe(false);
    expect(S3_BUCKET.test('lab\n')).toBe(false);
  });
});
