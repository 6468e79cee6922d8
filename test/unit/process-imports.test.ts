/**
 * What the lab's many processes load at start. The suite starts over a hundred host agents and as many supervisors,
 * and a control worker per lab (docs/benchmarks.md, "Loading less"). A local run never loads the AWS SDK (~0.4 s of
 * CPU a process): the AWS paths load it on first use (lib/aws-clients.ts, lib/s3-claims.ts, worker/aws-setup.ts). A
 * supervisor loads no package at all. Checked in a fresh Node process, as the workers start, by what ends up in its
 * module cache; the probe is shown to see what is loaded where it is.
 */
import { inFreshProcess } from '../helpers/fresh-process';

/** The packages (scoped to `scope`, or any) a fresh Node process holds after requiring these modules of dist. */
function packagesLoadedBy(modules: string[], scope = '@aws-sdk'): string[] {
  const tail = `const pkgs = new Set(Object.keys(require.cache).map((f) => (/node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f) || [])[1]).filter((p) => p && p.startsWith(${JSON.stringify(scope)})));
    process.stdout.write(JSON.stringify([...pkgs].sort()));`;
  return JSON.parse(inFreshProcess(modules, tail)) as string[];
}

test('the host agent and its supervisor load no AWS SDK package (their imports, without their main)', () => {
  expect(packagesLoadedBy(['activities/host', 'infra/providers/local/local-provider', 'lib/io-cap', 'lib/cgroups'])).toEqual([]);
});

test('a control worker and its activities load no AWS SDK package until a run uses AWS', () => {
  expect(packagesLoadedBy(['worker/control-worker', 'activities/control', 'client/program'])).toEqual([]);
});

test('the probe sees the SDK where it is loaded (the AWS setup, the S3 claims)', () => {
  expect(packagesLoadedBy(['worker/aws-setup'])).toEqual(expect.arrayContaining(['@aws-sdk/client-ec2', '@aws-sdk/client-s3', '@aws-sdk/client-ssm']));
  expect(packagesLoadedBy(['lib/s3-claims'])).toContain('@aws-sdk/client-s3');
});

test('a host supervisor (one per host) loads no package at all: its host.json reader is apart from the provider', () => {
  expect(packagesLoadedBy(['worker/host-supervisor'], '')).toEqual([]);
  expect(packagesLoadedBy(['infra/providers/local/local-provider'], '')).toEqual(expect.arrayContaining(['zod', '@temporalio/common']));
});
