/**
 * The EC2 provider and the S3 results store against moto's server (a real AWS API endpoint on 127.0.0.1):
 * provisioning a two-class experiment, teardown, a retry after a timeout, throttling, console output, S3 with SSE.
 */
import {
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeVolumesCommand,
  RegisterImageCommand,
  type EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { findWalg } from '../../lib/walg';
import { dataVolumeGiB } from '../../common/input/aws';
import { estimateCost } from '../../common/input/cost';
import { RESOURCE_TAGS } from '../../common/core/names';
import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { volumeBytes } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import { S3ResultsStore } from '../../lib/s3-results-store';
import { clientToken } from '../../infra/providers/aws/ec2-provider';
import { DEFAULT_AWS_POLICY } from '../../infra/providers/aws/policy';
import { awsInput, awsSpec, hostRequests, NVME_ONLY, startAwsTestbed, TEST_BUCKET, TEST_PROFILE, type AwsTestbed } from '../helpers/aws-lab';
import { uniqueId } from '../helpers/temporal';

async function instancesOfRun(ec2: EC2Client, runId: string): Promise<Instance[]> {
  const out = await ec2.send(new DescribeInstancesCommand({ Filters: [{ Name: `tag:${RESOURCE_TAGS.runId}`, Values: [runId] }] }));
  return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
}

/** The sha256 of the WAL-G binary this control worker ships to its hosts. */
const walgSha256 = createHash('sha256').update(readFileSync(findWalg()!)).digest('hex');

const live = (instances: Instance[]) => instances.filter((i) => i.State?.Name !== 'terminated');
const tagsOf = (i: { Tags?: { Key?: string; Value?: string }[] }) => Object.fromEntries((i.Tags ?? []).map((t) => [t.Key, t.Value]));

/** An EC2 error response as the API sends it, so the SDK's own deserializer and retry strategy handle it. */
function throttleResponse() {
  const xml =
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>test</RequestID></Response>';
  return { statusCode: 503, headers: { 'content-type': 'text/xml;charset=UTF-8' }, body: Readable.from([Buffer.from(xml)]) };
}

describe('Ec2Provider and S3 on moto', () => {
  let bed: AwsTestbed;
  const runs: string[] = [];
  const newRun = () => {
    const id = uniqueId('aws-run');
    runs.push(id);
    return id;
  };

  beforeAll(async () => {
    bed = await startAwsTestbed();
  });
  afterAll(async () => {
    if (!bed) return;
    try {
      // Whatever a test did, nothing of its runs may be left in moto.
      const { provider } = bed.setup();
      for (const runId of runs) for (const h of (await provider.list()).filter((x) => x.runId === runId)) await provider.teardown(h.hostId, { sweptRun: runId });
      for (const runId of runs) expect(await bed.moto.leftovers(runId)).toEqual([]);
    } finally {
      await bed.moto.stop();
    }
  });

  it('provisions the hosts of a two-class experiment, tagged, with the gp3 volume attached, and tears them down', async () => {
    const { provider } = bed.setup();
    const spec = awsSpec(bed.network);
    const runId = newRun();
    const requests = hostRequests(spec, runId);
    expect(requests.map((r) => r.className).sort()).toEqual(['gp3', 'nvme']);

    const records = await Promise.all(requests.map((r) => provider.provision(r)));
    const instances = live(await instancesOfRun(bed.moto.clients.ec2, runId));
    expect(instances).toHaveLength(2);
    for (const req of requests) {
      const record = records.find((r) => r.hostId === req.hostId)!;
      const instance = instances.find((i) => i.InstanceId === record.instanceId)!;
      expect(instance.State?.Name).toBe('running');
      expect(instance.InstanceType).toBe('m6id.4xlarge');
      expect(instance.SubnetId).toBe(bed.network.subnetId);
      expect(instance.IamInstanceProfile?.Arn).toContain(TEST_PROFILE);
      expect(instance.ClientToken).toBe(clientToken(runId, req.hostId));
      expect(tagsOf(instance)).toMatchObject({
        [RESOURCE_TAGS.runId]: runId,
        [RESOURCE_TAGS.hostId]: req.hostId,
        [RESOURCE_TAGS.experiment]: 'aws-test',
        [RESOURCE_TAGS.expiresAt]: req.expiresAt,
      });
      expect(record).toMatchObject({ provider: 'aws', kind: req.storageClass.kind, postgres: { host: instance.PrivateIpAddress, port: 5432 } });
      // The user-data names the host, the agent package and the Temporal endpoint; it holds no secret.
      const attr = await bed.moto.clients.ec2.send(new DescribeInstanceAttributeCommand({ InstanceId: instance.InstanceId, Attribute: 'userData' }));
      const userData = Buffer.from(attr.UserData?.Value ?? '', 'base64').toString();
      expect(userData).toContain(`HOST_ID='${req.hostId}'`);
      expect(userData).toMatch(new RegExp(`AGENT_S3_URI='s3://${TEST_BUCKET}/storage-lab/agent/storage-lab-agent-[0-9a-f]+\\.tgz'`));
      // The control worker's WAL-G goes beside the agent, named by version, CPU and hash, its sha256 recorded.
      const walgKey = new RegExp(`WALG_S3_URI='s3://${TEST_BUCKET}/(storage-lab/agent/wal-g-3\\.0\\.8-linux-${process.arch}-[0-9a-f]{20})'`).exec(userData)![1];
      const shipped = await bed.moto.clients.s3.send(new HeadObjectCommand({ Bucket: TEST_BUCKET, Key: walgKey }));
      expect(shipped.Metadata?.sha256).toBe(walgSha256);
      expect(userData).toContain(`WALG_SHA256='${walgSha256}'`);
      expect(userData).toContain(`WALG_ARCH='${process.arch}'`);
      expect(userData).toContain(`STORAGE_KIND='${req.storageClass.kind}'`);
    }

    const volumes = (await bed.moto.clients.ec2.send(new DescribeVolumesCommand({ Filters: [{ Name: `tag:${RESOURCE_TAGS.runId}`, Values: [runId] }] })))
      .Volumes!;
    expect(volumes).toHaveLength(1);
    const gp3 = requests.find((r) => r.className === 'gp3')!;
    const gp3Instance = instances.find((i) => tagsOf(i)[RESOURCE_TAGS.hostId] === gp3.hostId)!;
    expect(volumes[0]).toMatchObject({
      VolumeType: 'gp3',
      Iops: 4000,
      Throughput: 250,
      Size: dataVolumeGiB(volumeBytes(spec), spec.storageClasses.gp3),
      State: 'in-use',
      AvailabilityZone: gp3Instance.Placement?.AvailabilityZone,
    });
    // 4,000 IOPS need at least 8 GiB on gp3 (500 IOPS per GiB), more than the tiny data set asks for.
    expect(volumes[0].Size).toBe(8);
    expect(volumes[0].Attachments?.[0]).toMatchObject({ InstanceId: gp3Instance.InstanceId, Device: '/dev/sdf', State: 'attached' });
    expect(tagsOf(volumes[0])[RESOURCE_TAGS.hostId]).toBe(gp3.hostId);

    // A second provision of the same hosts (a retried activity) finds them: nothing new.
    const again = await Promise.all(requests.map((r) => provider.provision(r)));
    expect(again.map((r) => r.instanceId).sort()).toEqual(records.map((r) => r.instanceId).sort());
    expect(live(await instancesOfRun(bed.moto.clients.ec2, runId))).toHaveLength(2);

    const listed = (await provider.list()).filter((h) => h.runId === runId);
    expect(listed.map((h) => h.hostId).sort()).toEqual(requests.map((r) => r.hostId).sort());
    expect(listed.find((h) => h.hostId === gp3.hostId)?.resources).toEqual(expect.arrayContaining([gp3Instance.InstanceId, volumes[0].VolumeId]));

    for (const r of requests) await provider.teardown(r.hostId);
    expect(await bed.moto.leftovers(runId)).toEqual([]);
    // Idempotent: a second teardown finds nothing and succeeds.
    for (const r of requests) await provider.teardown(r.hostId);
  });

  it('claims a host for the workflow that launches it (its tags): another owner of the host id is refused before a launch, and neither its teardown, kill nor diagnose touches the instance', async () => {
    const { provider } = bed.setup();
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    const owner = { workflowId: `${runId}/nvme-0`, execution: 'e1' };
    const other = { workflowId: 'colliding-run/nvme-0', execution: 'e2' };
    const record = await provider.provision({ ...req, owner });
    const hostInstances = async () =>
      live((await bed.moto.clients.ec2.send(new DescribeInstancesCommand({ Filters: [{ Name: `tag:${RESOURCE_TAGS.hostId}`, Values: [req.hostId] }] }))).Reservations?.flatMap((r) => r.Instances ?? []) ?? []);
    const [instance] = await hostInstances();
    expect(tagsOf(instance)).toMatchObject({ [RESOURCE_TAGS.workflowId]: owner.workflowId, [RESOURCE_TAGS.execution]: 'e1' });
    // A run whose host id collides: refused before anything is launched, both runs named.
    await expect(provider.provision({ ...req, runId: 'colliding-run', owner: other })).rejects.toMatchObject({
      type: 'OwnedByAnotherRunError',
      nonRetryable: true,
      message: expect.stringMatching(new RegExp(`host ${req.hostId}: run "${runId}", workflow "${owner.workflowId}" \\(execution e1\\) owns instance ${record.instanceId}; run "colliding-run", workflow "${other.workflowId}" \\(execution e2\\) may not provision it: refused, nothing of it touched`)),
    });
    expect((await hostInstances()).map((i) => i.InstanceId)).toEqual([record.instanceId]);
    // Its undo leaves the instance, its kill and the sweeper (for another run) are refused, its diagnose says whose it is.
    expect(await provider.teardown(req.hostId, { owner: other })).toMatch(new RegExp(`left ${record.instanceId} of run "${runId}"`));
    await expect(provider.kill(req.hostId, { owner: other })).rejects.toMatchObject({ type: 'OwnedByAnotherRunError' });
    await expect(provider.teardown(req.hostId, { sweptRun: 'colliding-run' })).rejects.toMatchObject({ type: 'OwnedByAnotherRunError' });
    expect((await provider.inspect(req.hostId, { owner: other })).text).toMatch(/not described: run .* owns instance/);
    expect((await hostInstances()).map((i) => i.State?.Name)).toEqual(['running']);
    // Its owner removes it.
    expect(await provider.teardown(req.hostId, { owner })).toBe(`removed ${req.hostId}`);
    expect(await hostInstances()).toEqual([]);
  });

  it('creates no duplicate when a retry follows a timed-out RunInstances that did launch', async () => {
    const clients = bed.moto.newClients();
    const tokens: string[] = [];
    let timeouts = 0;
    // Outside the SDK's retries: the call reaches moto and launches, then the caller sees a timeout (an activity
    // attempt that timed out); the test then retries the activity the way Temporal would.
    clients.ec2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'RunInstancesCommand') return next(args);
        tokens.push((args.input as { ClientToken: string }).ClientToken);
        const out = await next(args);
        if (timeouts++ === 0) throw Object.assign(new Error('socket timed out after the request was sent'), { name: 'TimeoutError' });
        return out;
      },
      { step: 'initialize', name: 'timeoutAfterLaunch' },
    );
    const { provider } = bed.setup({ clients });
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    await expect(provider.provision(req)).rejects.toThrow(/timed out/);
    const record = await provider.provision(req);
    const instances = live(await instancesOfRun(bed.moto.clients.ec2, runId));
    expect(instances.map((i) => i.InstanceId)).toEqual([record.instanceId]);
    expect(instances[0].ClientToken).toBe(clientToken(runId, req.hostId));
    // The retry found the host by its tags; had it called again, it would have sent the same token.
    expect(tokens).toEqual([clientToken(runId, req.hostId)]);
    await provider.teardown(req.hostId);
    expect(await bed.moto.leftovers(runId)).toEqual([]);
  });

  it('keeps one instance when the SDK itself resends RunInstances after a timeout (same ClientToken)', async () => {
    const clients = bed.moto.newClients();
    const tokens: string[] = [];
    let timeouts = 0;
    // Inside the SDK's retry loop: the first attempt launches, its response is lost, the SDK resends.
    clients.ec2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'RunInstancesCommand') return next(args);
        const out = await next(args);
        if (timeouts++ === 0) throw Object.assign(new Error('response lost'), { name: 'TimeoutError', $metadata: {} });
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'loseFirstResponse' },
    );
    clients.ec2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'RunInstancesCommand') tokens.push((args.input as { ClientToken: string }).ClientToken);
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'recordTokens' },
    );
    const { provider } = bed.setup({ clients });
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    const record = await provider.provision(req);
    expect(tokens).toEqual([clientToken(runId, req.hostId), clientToken(runId, req.hostId)]);
    // Real EC2 returns the first instance for the repeated token; moto launches a second, which the provider ends.
    const instances = await instancesOfRun(bed.moto.clients.ec2, runId);
    expect(instances).toHaveLength(2);
    expect(live(instances).map((i) => i.InstanceId)).toEqual([record.instanceId]);
    await provider.teardown(req.hostId);
    expect(await bed.moto.leftovers(runId)).toEqual([]);
  });

  it('rides out API throttling (RequestLimitExceeded) with the SDK retries, and gives up retryably past them', async () => {
    const throttled = (maxAttempts: number, throttles: number) => {
      const clients = bed.moto.newClients({ maxAttempts });
      const seen = { throttles: 0 };
      clients.ec2.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'DescribeInstancesCommand' && seen.throttles < throttles) {
            seen.throttles++;
            return { response: throttleResponse(), output: {} } as never;
          }
          return next(args);
        },
        { step: 'deserialize', priority: 'low', name: 'throttle' },
      );
      return { clients, seen };
    };
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);

    const ok = throttled(3, 2);
    const record = await bed.setup({ clients: ok.clients }).provider.provision(req);
    expect(ok.seen.throttles).toBe(2);
    expect(record.instanceId).toMatch(/^i-/);

    // One attempt only: the throttle reaches the caller, as a retryable error (not a rejection of the request).
    const short = throttled(1, 1);
    const err = await bed.setup({ clients: short.clients }).provider.teardown(req.hostId).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'RequestLimitExceeded' });
    await bed.setup().provider.teardown(req.hostId);
    expect(await bed.moto.leftovers(runId)).toEqual([]);
  });

  it('diagnoses a host with its state and console output, and kills it with a forced stop', async () => {
    const { provider } = bed.setup();
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    const record = await provider.provision(req);
    const { text, oomKills } = await provider.inspect(req.hostId);
    expect(oomKills).toBeNull();
    expect(text).toContain(`instance ${record.instanceId} (m6id.4xlarge, ${bed.network.zone}) is running`);
    // moto's canned console text: a Linux boot log.
    expect(text).toMatch(/console output:\n[\s\S]*Linux version/);
    await provider.kill(req.hostId);
    const [stopped] = await instancesOfRun(bed.moto.clients.ec2, runId);
    expect(['stopping', 'stopped']).toContain(stopped.State?.Name);
    // A killed host is not reused.
    await expect(provider.provision(req)).rejects.toThrow(/is (stopping|stopped)/);
    await provider.teardown(req.hostId);
    expect(await bed.moto.leftovers(runId)).toEqual([]);
    expect((await provider.inspect('no-such-host')).text).toContain('no EC2 instance tagged');
  });

  it('refuses hosts that must share a database password without an SSM parameter for it, before launching', async () => {
    const { provider } = bed.setup();
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    await expect(provider.provision({ ...req, passwordScope: runId })).rejects.toMatchObject({
      type: 'InvalidSpecError',
      nonRetryable: true,
      message: expect.stringContaining('aws.databasePasswordParameter'),
    });
    expect(await bed.moto.leftovers(runId)).toEqual([]);
    const shared = { ...req, passwordScope: runId, aws: { ...req.aws!, databasePasswordParameter: '/storage-lab/db-password' } };
    await provider.provision(shared);
    await provider.teardown(req.hostId);
  });

  it('preflight names what the account lacks', async () => {
    const { provider } = bed.setup();
    const good = await provider.preflight(awsSpec(bed.network));
    expect(good.problems).toEqual([]);
    // The ci sizes' 384 MiB memory limit is no limit on an m6id.4xlarge: the warning says what ran.
    expect(good.warnings).toEqual([expect.stringMatching(/^host\.memoryLimitMiB: 384 MiB is not enforced on AWS, each host has the m6id\.4xlarge's 65536 MiB/)]);
    const tooBig = await provider.preflight(awsSpec(bed.network, { host: { instanceType: 'm6id.xlarge' }, data: { scale: 33_000 } }));
    expect(tooBig.problems.join('\n')).toMatch(/data\.scale: the data needs about \d+ GB but m6id\.xlarge has 237 GB of instance store/);
    const mismatch = await provider.preflight(awsSpec(bed.network, { aws: { resultsBucket: 'elsewhere', temporalNamespace: 'other' } }));
    expect(mismatch.problems.join('\n')).toMatch(/aws\.temporalNamespace: [\s\S]*aws\.resultsBucket: .*s3:\/\/storage-lab-test/);
    const wrongSubnet = await provider.preflight(awsSpec(bed.network, { aws: { subnetId: 'subnet-0000000000000000f' } }));
    expect(wrongSubnet.problems.join('\n')).toMatch(/aws\.subnetId: .*subnet-0000000000000000f/);
    const noNvme = await provider.preflight(awsSpec(bed.network, { host: { instanceType: 'm6i.4xlarge' } }));
    expect(noNvme.problems.join('\n')).toMatch(/storageClasses\.nvme\.kind: instance type m6i\.4xlarge has no instance store/);
    // The operator prices m6id.4xlarge only: another type cannot be held to the cost ceiling.
    expect(noNvme.problems).toContain(
      'host.instanceType: this control worker prices only m6id.4xlarge (STORAGE_LAB_AWS_HOURLY_PRICES), so it cannot hold a m6i.4xlarge run to its cost ceiling; choose one of them, or ask the operator to add m6i.4xlarge=<USD per hour>',
    );
  });

  it('boots only images whose owner the operator allows, however the spec names the image, and says which field chose it', async () => {
    const debianOnly = bed.setup({ policy: DEFAULT_AWS_POLICY }).provider;
    const spec = awsSpec(bed.network);
    const { imageId, imageOwnerId } = bed.network;
    // moto has no image of Debian's account (the default allow-list): its image is refused, with the variable to change.
    expect((await debianOnly.preflight(spec)).problems).toEqual([
      `aws.imageId: image ${imageId} belongs to ${imageOwnerId} (amazon), not to an owner this control worker allows (136693071363); use an image of one of them, or ask the operator to add its owner to STORAGE_LAB_AWS_IMAGE_OWNERS`,
    ]);
    // An owner alias allows every image of that owner.
    const amazon = bed.setup({ policy: { ...DEFAULT_AWS_POLICY, imageOwners: ['amazon'] } }).provider;
    expect((await amazon.preflight(spec)).problems).toEqual([]);

    // An image of this account's own (moto registers it under the caller's account, 123456789012, no alias).
    const own = await bed.moto.clients.ec2.send(
      new RegisterImageCommand({ Name: `own-${uniqueId('img')}`, RootDeviceName: '/dev/xvda', Architecture: 'x86_64', BlockDeviceMappings: [{ DeviceName: '/dev/xvda', Ebs: { VolumeSize: 8 } }] }),
    );
    const ownSpec = awsSpec(bed.network, { aws: { imageId: own.ImageId } });
    expect((await bed.setup().provider.preflight(ownSpec)).problems).toEqual([
      `aws.imageId: image ${own.ImageId} belongs to 123456789012, not to an owner this control worker allows (${imageOwnerId}); use an image of one of them, or ask the operator to add its owner to STORAGE_LAB_AWS_IMAGE_OWNERS`,
    ]);

    // Through a public SSM parameter the image it resolves to is checked, named by the parameter's field.
    const byParameter = (name: string) => {
      const input = awsInput(bed.network, { aws: { imageSsmParameter: name } });
      delete (input.aws as Record<string, unknown>).imageId;
      return resolveSpec(input);
    };
    const viaParameter = byParameter('/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64');
    expect((await debianOnly.preflight(viaParameter)).problems).toEqual([
      expect.stringMatching(/^aws\.imageSsmParameter: image ami-[0-9a-f]{17} belongs to \d{12} \(amazon\), not to an owner this control worker allows \(136693071363\)/),
    ]);
    expect((await amazon.preflight(viaParameter)).problems).toEqual([]);
    // A public parameter that holds something else is refused without echoing its value.
    const notAnImage = byParameter('/aws/service/global-infrastructure/regions/us-east-1/availability-zones/use1-az1');
    const [wrong] = (await amazon.preflight(notAnImage)).problems;
    expect(wrong).toBe(
      'aws.imageSsmParameter: /aws/service/global-infrastructure/regions/us-east-1/availability-zones/use1-az1 does not hold an AMI id; name a parameter that does, or set aws.imageId',
    );

    // The launch checks again, where the image would boot with the host role: refused, nothing started.
    const runId = newRun();
    const [req] = hostRequests(ownSpec, runId);
    await expect(bed.setup().provider.provision(req)).rejects.toMatchObject({
      type: 'InvalidSpecError',
      nonRetryable: true,
      message: expect.stringContaining(`aws.imageId: image ${own.ImageId} belongs to 123456789012`),
    });
    expect(await instancesOfRun(bed.moto.clients.ec2, runId)).toEqual([]);
  });

  it("holds a run to the lower of aws.maxCostUsd and the operator's ceiling, at prices no lower than the operator's", async () => {
    const capped = bed.setup({ policy: { ...bed.env.policy!, maxCostUsd: 5 } }).provider;
    // ci sizes: each host is mostly the duration model's boot and teardown (13 min); 32 of them are about $6.70.
    const many = { clustersPerClass: 16 };
    const fix = "above its ceiling of $5 (the control worker's ceiling, STORAGE_LAB_AWS_MAX_COST_USD; aws.maxCostUsd can lower it, not raise it)";
    for (const over of [many, { ...many, aws: { maxCostUsd: 1000 } }, { ...many, aws: { hourlyPriceUsd: { 'm6id.4xlarge': 0.0001 } } }]) {
      const { problems } = await capped.preflight(awsSpec(bed.network, over));
      expect(problems).toEqual([expect.stringMatching(/^aws\.maxCostUsd: the run is estimated at \$\d+\.\d\d for 32 hosts \(m6id\.4xlarge on-demand [\d.]+ instance-hours = \$/)]);
      expect(problems[0]).toContain(fix);
    }
    const estimate = Number(/estimated at \$([\d.]+)/.exec((await capped.preflight(awsSpec(bed.network, many))).problems[0])![1]);
    expect(estimate).toBeGreaterThan(5);
    expect(estimate).toBeCloseTo(estimateCost(awsSpec(bed.network, many)).totalUsd!, 2);
    expect((await capped.preflight(awsSpec(bed.network))).problems).toEqual([]);

    // With the operator's default ceiling ($100): seed-full's sizes pass; 16 clusters per class of m6id.8xlarge do not.
    const { provider } = bed.setup({ policy: { ...bed.env.policy!, hourlyPriceUsd: { 'm6id.4xlarge': 0.9492, 'm6id.8xlarge': 1.8984 } } });
    const seed = { preset: 'seed-full', host: { memoryLimitMiB: 65_536 } };
    expect((await provider.preflight(awsSpec(bed.network, seed))).problems).toEqual([]);
    const large = { ...seed, clustersPerClass: 16, host: { instanceType: 'm6id.8xlarge', memoryLimitMiB: 131_072 }, aws: { rootVolumeGiB: 40 } };
    const [refused, ...more] = (await provider.preflight(awsSpec(bed.network, large))).problems;
    expect(more).toEqual([]);
    expect(refused).toMatch(/^aws\.maxCostUsd: the run is estimated at \$\d+\.\d\d for 32 hosts .*above its ceiling of \$100 \(the control worker's ceiling, STORAGE_LAB_AWS_MAX_COST_USD/);
  });

  it("checks a drill on AWS before any host: the image's owner, the lab's Temporal and the drill's cost ceiling", async () => {
    const drill = (kind: 'restore' | 'failover', over: Record<string, unknown> = {}) => {
      const input = { preset: 'ci', provider: 'aws', storageClass: { kind: 'ebs' }, backup: { store: { kind: 's3', bucket: TEST_BUCKET } }, aws: awsInput(bed.network).aws, ...over };
      return kind === 'restore' ? resolveRestoreDrill(input) : resolveFailoverDrill({ ...input, aws: { ...(input.aws as object), databasePasswordParameter: '/storage-lab/db-password' } });
    };
    const { provider } = bed.setup();
    for (const kind of ['restore', 'failover'] as const) expect(await provider.preflightDrill(kind, drill(kind))).toEqual({ problems: [], warnings: [] });
    // An image of an owner the operator does not allow, and hosts that would dial another Temporal: refused by name.
    const strict = bed.setup({ policy: { ...bed.env.policy!, imageOwners: ['136693071363'] } }).provider;
    expect((await strict.preflightDrill('restore', drill('restore'))).problems).toEqual([expect.stringMatching(/^aws\.imageId: image ami-\w+ belongs to .* not to an owner this control worker allows \(136693071363\)/)]);
    const elsewhere = drill('failover', { aws: { ...awsInput(bed.network).aws as object, temporalAddress: 'temporal.example.com:7233' } });
    expect((await provider.preflightDrill('failover', elsewhere)).problems).toEqual([expect.stringMatching(/^aws\.temporalAddress: the host agents must dial this lab's Temporal/)]);
    // 50 rounds of an hour-long outage bound on four hosts are past a $5 ceiling, at the operator's price whatever the spec quotes.
    const capped = bed.setup({ policy: { ...bed.env.policy!, maxCostUsd: 5 } }).provider;
    const long = drill('failover', { rounds: 50, writer: { maxOutageSeconds: 3_600 }, aws: { ...awsInput(bed.network).aws as object, hourlyPriceUsd: { 'm6id.4xlarge': 0.0001 } } });
    const [refused, ...more] = (await capped.preflightDrill('failover', long)).problems;
    expect(more).toEqual([]);
    expect(refused).toMatch(/^aws\.maxCostUsd: the failover drill is estimated at \$\d+\.\d\d \(4 m6id\.4xlarge hosts for [\d.]+ h each at \$0\.9492\/h, with their root volumes\), above its ceiling of \$5 \(the control worker's ceiling/);
    expect(refused).toContain('lower rounds or the writer');
  });

  it("makes host agents dial this lab's Temporal only: they fetch its credentials and take its tasks", async () => {
    const { provider } = bed.setup();
    const elsewhere = awsSpec(bed.network, { aws: { temporalAddress: 'temporal.example.com:7233' } });
    const [problem] = (await provider.preflight(elsewhere)).problems;
    expect(problem).toMatch(/^aws\.temporalAddress: the host agents must dial this lab's Temporal, \S+:\d+ \(STORAGE_LAB_AWS_TEMPORAL_ADDRESS on the control worker/);
    const runId = newRun();
    const [req] = hostRequests(elsewhere, runId);
    await expect(provider.provision(req)).rejects.toMatchObject({ type: 'InvalidSpecError', nonRetryable: true, message: expect.stringContaining('aws.temporalAddress') });
    expect(await instancesOfRun(bed.moto.clients.ec2, runId)).toEqual([]);
  });

  it('launches only instance types the operator prices, whatever path the request took (drills have no provider preflight)', async () => {
    const runId = newRun();
    const [req] = hostRequests(awsSpec(bed.network, NVME_ONLY), runId);
    await expect(bed.setup().provider.provision({ ...req, instanceType: 'm6id.32xlarge' })).rejects.toMatchObject({
      type: 'InvalidSpecError',
      nonRetryable: true,
      message: expect.stringContaining('host.instanceType: this control worker prices only m6id.4xlarge (STORAGE_LAB_AWS_HOURLY_PRICES)'),
    });
    expect(await instancesOfRun(bed.moto.clients.ec2, runId)).toEqual([]);
  });

  it("refuses durations whose worst-case pgbench logs do not fit a host's root volume", async () => {
    const { provider } = bed.setup();
    const { problems } = await provider.preflight(awsSpec(bed.network, { workload: { durationSeconds: 86_400 } }));
    // 86,401 s x 16 vCPUs x 50,000 transactions a second x 48 bytes.
    expect(problems).toEqual([
      expect.stringMatching(/^workload\.durationSeconds: warm-up and run may write 3089\.9 GiB of pgbench transaction logs on a host's root volume \(16 vCPUs/),
    ]);
    expect(problems[0]).toContain('which has 16 GiB beside the system (aws.rootVolumeGiB = 20); lower workload.durationSeconds or workload.warmupSeconds, or raise aws.rootVolumeGiB to at least 3094');
  });

  it('stores results in S3 under the run prefix with server-side encryption', async () => {
    const s3 = bed.moto.clients.s3;
    const store = new S3ResultsStore(s3, { bucket: TEST_BUCKET, prefix: 'storage-lab/results' });
    const runId = 'exp-s3/round trip';
    await store.put(runId, 'result.json', '{"ok":true}');
    await store.put(runId, 'clusters/h-1.json', '{"h":1}');
    await store.put(runId, 'clusters/h-2.json', '{"h":2}');
    await store.put(runId, 'report.md', '# report');
    expect(store.location(runId)).toBe(`s3://${TEST_BUCKET}/storage-lab/results/exp-s3_2fround_20trip`);
    expect(await store.get(runId, 'result.json')).toBe('{"ok":true}');
    expect(await store.get(runId, 'missing.json')).toBeNull();
    expect(await store.list(runId, 'clusters')).toEqual(['clusters/h-1.json', 'clusters/h-2.json']);
    // Listed by run id: the folder (the id escaped injectively) reads back to it.
    expect(await store.runs()).toContain(runId);
    const head = await s3.send(new HeadObjectCommand({ Bucket: TEST_BUCKET, Key: 'storage-lab/results/exp-s3_2fround_20trip/result.json' }));
    expect(head.ServerSideEncryption).toBe('AES256');
    expect(head.ContentType).toBe('application/json');

    const kms = new S3ResultsStore(s3, { bucket: TEST_BUCKET, prefix: 'kms', kmsKeyId: 'alias/storage-lab' });
    await kms.put(runId, 'result.json', '{}');
    const kmsHead = await s3.send(new HeadObjectCommand({ Bucket: TEST_BUCKET, Key: 'kms/exp-s3_2fround_20trip/result.json' }));
    expect(kmsHead).toMatchObject({ ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'alias/storage-lab' });
  });
});
