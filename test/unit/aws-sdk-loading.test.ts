/**
 * A local run never loads the AWS SDK: it costs a process ~0.4 s of CPU, and the suite starts over a hundred host
 * agents, their supervisors and a control worker per lab (docs/benchmarks.md, "Loading less"). The AWS paths load
 * it on first use (lib/aws-clients.ts, lib/s3-claims.ts, worker/aws-setup.ts). Checked in a fresh Node process, as
 * the workers start, by what ends up in its module cache; the probe is shown to see the SDK where it is loaded.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const DIST = path.resolve(__dirname, '../..');

/** The @aws-sdk packages a fresh Node process holds after requiring these modules of dist. */
function awsPackagesLoadedBy(modules: string[]): string[] {
  const script = `
    for (const m of ${JSON.stringify(modules.map((m) => path.join(DIST, m)))}) require(m);
    const pkgs = new Set(Object.keys(require.cache).map((f) => (/node_modules\\/(@aws-sdk\\/[^/]+)/.exec(f) || [])[1]).filter(Boolean));
    process.stdout.write(JSON.stringify([...pkgs].sort()));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 })) as string[];
}

test('the host agent and its supervisor load no AWS SDK package (their imports, without their main)', () => {
  expect(awsPackagesLoadedBy(['activities/host', 'infra/providers/local/local-provider', 'lib/io-cap', 'lib/cgroups'])).toEqual([]);
});

test('a control worker and its activities load no AWS SDK package until a run uses AWS', () => {
  expect(awsPackagesLoadedBy(['worker/control-worker', 'activities/control', 'client/program'])).toEqual([]);
});

test('the probe sees the SDK where it is loaded (the AWS setup, the S3 claims)', () => {
  expect(awsPackagesLoadedBy(['worker/aws-setup'])).toEqual(expect.arrayContaining(['@aws-sdk/client-ec2', '@aws-sdk/client-s3', '@aws-sdk/client-ssm']));
  expect(awsPackagesLoadedBy(['lib/s3-claims'])).toContain('@aws-sdk/client-s3');
});
