/**
 * The IAM policies in infra/providers/aws/iam against the code: every AWS call the control worker and the host bootstrap
 * make is allowed, and every EC2 action that creates or changes something is held to the lab's tags.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../lib/lab-paths';

interface Statement {
  Sid: string;
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, unknown>>;
}

const policy = (name: string): Statement[] =>
  (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'infra', 'providers', 'aws', 'iam', name), 'utf8')) as { Statement: Statement[] }).Statement;
const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);
const allowed = (statements: Statement[], action: string) =>
  statements.some((s) => s.Effect === 'Allow' && list(s.Action).includes(action));
const source = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

/** IAM actions of the SDK calls in a source file (`new XCommand(`, `paginateX(`). */
function actionsOf(file: string): string[] {
  const text = source(file);
  const names = [...text.matchAll(/new (\w+)Command\(/g), ...text.matchAll(/paginate(\w+)\(/g)].map((m) => m[1]);
  const s3: Record<string, string> = {
    PutObject: 's3:PutObject',
    GetObject: 's3:GetObject',
    HeadObject: 's3:GetObject',
    ListObjectsV2: 's3:ListBucket',
    CreateBucket: 's3:CreateBucket',
    DeleteObject: 's3:DeleteObject',
    DeleteObjects: 's3:DeleteObject',
  };
  return [...new Set(names.map((n) => s3[n] ?? (n === 'GetParameter' ? 'ssm:GetParameter' : `ec2:${n}`)))].sort();
}

describe('IAM policies', () => {
  const control = policy('control-worker-policy.json');
  const host = policy('host-policy.json');

  it('let the control worker make every call the provider, the agent package and the results store make', () => {
    const used = [
      ...actionsOf('infra/providers/aws/ec2-provider.ts'),
      ...actionsOf('infra/providers/aws/agent-package.ts'),
      ...actionsOf('lib/s3-results-store.ts'),
    ];
    expect(used).toEqual(expect.arrayContaining(['ec2:RunInstances', 'ec2:CreateVolume', 's3:PutObject', 'ssm:GetParameter']));
    expect(used.filter((a) => !allowed(control, a))).toEqual([]);
    expect(allowed(control, 'iam:PassRole')).toBe(true);
  });

  it('let the host fetch the agent and its secrets, and write backups, and nothing on EC2', () => {
    const bootstrap = source('infra/providers/aws/user-data.sh');
    expect(bootstrap).toMatch(/aws_ s3 cp/);
    expect(bootstrap).toMatch(/aws_ ssm get-parameter/);
    for (const a of ['s3:GetObject', 'ssm:GetParameter', 's3:PutObject', 's3:ListBucket']) expect(allowed(host, a)).toBe(true);
    expect(host.flatMap((s) => list(s.Action)).filter((a) => a.startsWith('ec2:'))).toEqual([]);
  });

  it('let the control worker claim, publish, list and remove data sets in the backup bucket, and keep hosts from writing their records', () => {
    const used = [...new Set([...actionsOf('lib/s3-data-sets.ts'), ...actionsOf('lib/s3-claims.ts')])].sort();
    expect(used).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    const on = (statements: Statement[], effect: string, action: string, resource: string) =>
      statements.some((s) => s.Effect === effect && list(s.Action).includes(action) && list(s.Resource).some((r) => new RegExp(`^${r.replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`).test(resource)));
    const sets = 'arn:aws:s3:::BACKUP_BUCKET/storage-lab/backups/_datasets/ds-abc';
    for (const a of used.filter((x) => x !== 's3:ListBucket')) for (const r of [`${sets}.claim.json`, `${sets}.manifest.json`, `${sets}/basebackups_005/x`]) expect([a, r, on(control, 'Allow', a, r)]).toEqual([a, r, true]);
    expect(on(control, 'Allow', 's3:ListBucket', 'arn:aws:s3:::BACKUP_BUCKET')).toBe(true);
    // A host writes the repository (WAL-G), and is denied the records that make a set someone's and usable.
    for (const a of ['s3:PutObject', 's3:DeleteObject']) {
      expect(on(host, 'Allow', a, `${sets}/basebackups_005/x`)).toBe(true);
      expect(on(host, 'Deny', a, `${sets}/basebackups_005/base_000000010000000000000002_backup_stop_sentinel.json`)).toBe(false);
      for (const r of [`${sets}.claim.json`, `${sets}.manifest.json`]) expect(on(host, 'Deny', a, r)).toBe(true);
    }
  });

  it('hold every EC2 action that creates or changes an instance or volume to the lab tags', () => {
    for (const s of control) {
      const mutating = list(s.Action).some((a) => a.startsWith('ec2:') && !a.startsWith('ec2:Describe'));
      const onInstancesOrVolumes = list(s.Resource).some((r) => /:(instance|volume)\/\*$/.test(r));
      if (!mutating || !onInstancesOrVolumes || s.Sid === 'LaunchWithTheseNetworkImageAndRootVolume') continue;
      const condition = JSON.stringify(s.Condition ?? {});
      expect([s.Sid, /storage-lab:run-id|ec2:CreateAction/.test(condition)]).toEqual([s.Sid, true]);
    }
  });
});
