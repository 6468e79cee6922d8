/**
 * Hosts on EC2. A host is one instance, tagged with its run and host ids, whose user-data (infra/providers/aws/user-data.sh)
 * installs PostgreSQL and the host agent and mounts the storage under test: the instance-store NVMe that comes
 * with the instance type, or a gp3 volume this provider creates with the class's IOPS and throughput and attaches.
 * Every step is idempotent: a retried provision finds the host by its tags (and EC2 deduplicates RunInstances by
 * its ClientToken), a retried teardown finds what is left.
 */
import {
  AttachVolumeCommand,
  CreateVolumeCommand,
  DeleteVolumeCommand,
  DescribeImagesCommand,
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  GetConsoleOutputCommand,
  ModifyInstanceAttributeCommand,
  RunInstancesCommand,
  StopInstancesCommand,
  TerminateInstancesCommand,
  paginateDescribeInstances,
  paginateDescribeVolumes,
  type Filter,
  type Image,
  type Instance,
  type InstanceTypeInfo,
  type _InstanceType,
  type Tag,
  type Volume,
} from '@aws-sdk/client-ec2';
import { GetParameterCommand } from '@aws-sdk/client-ssm';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import { costCeilingProblems, drillCostProblems, type CostCeiling } from '../../../common/input/cost';
import { awsProvider, dataVolumeGiB, LIST_PRICES_USD, withPriceFloor, type AwsSpec } from '../../../common/providers/aws';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../../../common/input/drill-spec';
import { FAILURE_TYPES } from '../../../common/core/errors';
import { hostTaskQueue, RESOURCE_TAGS } from '../../../common/core/names';
import { classLimits, volumeBytes, type ExperimentSpec } from '../../../common/input/spec';
import { AMI_ID } from '../../../common/input/fields';
import { MAX_TPS_PER_CPU, PGBENCH_LOG_BYTES_PER_TRANSACTION, pgbenchLogBytes } from '../../../common/input/rules';
import { readUserDataTemplate, renderUserData } from './user-data';
import type { HostActor, HostConfig, HostInspection, HostRecord, HostRequest, ManagedHost } from '../../../common/core/hosts';
import { describeClaimant } from '../../../common/core/claims';
import { ownedByAnotherRun } from '../../../lib/claims';
import type { HostProvider } from '../host-provider';
import type { AgentPackageSource } from './agent-package';
import type { AwsClients } from '../../../lib/aws-clients';
import { awsErrorCode, callAws } from '../../../lib/aws-errors';
import type { AwsPolicy } from './policy';

/** Instance states of a host that exists (terminated and shutting-down ones are gone, or going). */
const LIVE_INSTANCE_STATES = ['pending', 'running', 'stopping', 'stopped'];
/** Where the gp3 data volume is attached (Nitro instances show it as an NVMe device; the bootstrap finds it by model). */
const DATA_DEVICE = '/dev/sdf';
/** Paths on the host, as user-data.sh makes them. */
const HOST_DIR = '/var/lib/storage-lab/host';
const STORAGE_ROOT = '/srv/storage-lab';
const POSTGRES_PORT = 5432;
const CONSOLE_LINES = 60;
/** What the system takes of a host's root volume: Debian, PostgreSQL, Node, the AWS CLI, the agent and its packages. */
const ROOT_VOLUME_SYSTEM_GIB = 4;

export interface Ec2ProviderOptions {
  clients: AwsClients;
  region: string;
  /** API endpoint override (moto); passed to the hosts' AWS CLI too. */
  endpoint?: string;
  /** This lab: the Temporal address/namespace of the control worker, tagged on everything it creates. */
  owner: string;
  /** The namespace the control worker runs workflows in; host agents must poll the same. */
  temporalNamespace: string;
  /** Bucket and key prefix of results (the control worker's STORAGE_LAB_AWS_BUCKET); the agent package goes there too. */
  bucket: string;
  resultsPrefix: string;
  agentPackage: AgentPackageSource;
  /** The operator's rules: image owners, the cost ceiling and its prices, the Temporal address host agents dial. */
  policy: Required<AwsPolicy>;
  /** Node version the hosts install (default: this process's, so hosts run what the control worker runs). */
  nodeVersion?: string;
  /** Poll interval and bounds of the waits for EC2 state changes. */
  waits?: { pollMs?: number; instanceMinutes?: number; volumeMinutes?: number };
}

/** ClientToken of a host's RunInstances (or its data volume's CreateVolume): stable per (run, host), <= 64 chars. */
export function clientToken(runId: string, hostId: string, purpose: 'instance' | 'data-volume' = 'instance'): string {
  return `sl-${createHash('sha256').update(`${runId}\0${hostId}\0${purpose}`).digest('hex').slice(0, 48)}`;
}

export class Ec2Provider implements HostProvider {
  readonly name = awsProvider.name;
  private template: string | null = null;

  constructor(private readonly opts: Ec2ProviderOptions) {}

  private get ec2() {
    return this.opts.clients.ec2;
  }

  async provision(req: HostRequest): Promise<HostRecord> {
    const aws = this.settingsOf(req);
    // The instance's tags, set atomically when it is launched, are the host's owner record: an instance of this host
    // id that another run (or another workflow) launched is refused before anything is launched or touched.
    const actor: HostActor | undefined = req.owner ? { owner: req.owner } : undefined;
    const others = (await this.instancesOf(req.hostId, LIVE_INSTANCE_STATES)).filter((i) => !actorMatches(i.Tags, actor, req.runId));
    if (others.length) throw ownedByAnotherRun(`host ${req.hostId}: ${ownerOfTags(others[0].Tags)} owns instance ${others[0].InstanceId}; ${whoAsks(actor, req.runId)} may not provision it: refused, nothing of it touched`);
    const instance = (await this.findInstance(req.hostId, req.runId)) ?? (await this.converge(req, await this.launch(req, aws)));
    const state = instance.State?.Name ?? '';
    if (!['pending', 'running'].includes(state))
      throw ApplicationFailure.nonRetryable(
        `host ${req.hostId}: instance ${instance.InstanceId} is ${state}${instance.StateReason?.Message ? ` (${instance.StateReason.Message})` : ''}; a stopped or terminated host is not reused: start a new run`,
        FAILURE_TYPES.hostGone,
      );
    const running = await this.waitForInstance(instance.InstanceId!, 'running');
    if (req.storageClass.kind === 'ebs') await this.ensureDataVolume(req, running);
    return { ...hostRecord(req, running.PrivateIpAddress ?? ''), instanceId: running.InstanceId };
  }

  async teardown(hostId: string, actor?: HostActor): Promise<string> {
    const all = await this.instancesOf(hostId, [...LIVE_INSTANCE_STATES, 'shutting-down']);
    // Only what the actor owns (the owner's workflow, or the run the sweeper judged); another run's is left alone.
    const instances = all.filter((i) => actorMatches(i.Tags, actor));
    const others = all.filter((i) => !actorMatches(i.Tags, actor));
    if (others.length && actor && 'sweptRun' in actor && !instances.length)
      throw ownedByAnotherRun(`host ${hostId}: ${ownerOfTags(others[0].Tags)} owns instance ${others[0].InstanceId}, not run ${JSON.stringify(actor.sweptRun)} that the sweeper judged; not removed`);
    const ids = instances.map((i) => i.InstanceId!);
    if (ids.length) {
      await callAws(`terminate ${ids.join(' ')}`, 'the control worker needs ec2:TerminateInstances on lab-tagged instances', () =>
        this.ec2.send(new TerminateInstancesCommand({ InstanceIds: ids })),
      );
      for (const id of ids) await this.waitForInstance(id, 'terminated');
    }
    // Termination detaches (or, with DeleteOnTermination, deletes) the data volume; delete what is left.
    await this.poll(`volumes of ${hostId} deleted`, this.opts.waits?.volumeMinutes ?? 10, async () => {
      const volumes = (await this.volumesOf(hostId)).filter((v) => actorMatches(v.Tags, actor));
      for (const v of volumes) {
        if (v.State === 'available') await this.deleteVolume(v.VolumeId!);
      }
      return volumes.length === 0 ? true : null;
    });
    return others.length ? `removed what ${hostId} had of this run; left ${others.map((i) => i.InstanceId).join(', ')} of ${ownerOfTags(others[0].Tags)}` : `removed ${hostId}`;
  }

  /**
   * A forced stop: the instance powers off without shutting down (no flush, every process dies), as in a crash.
   * Unlike terminate it keeps the instance and its gp3 volume for inspection (console output, the volume's data)
   * until teardown or the sweeper removes them; a stopped instance costs only its volumes.
   */
  async kill(hostId: string, actor?: HostActor): Promise<void> {
    const all = await this.instancesOf(hostId, ['pending', 'running']);
    const others = all.filter((i) => !actorMatches(i.Tags, actor));
    if (others.length) throw ownedByAnotherRun(`host ${hostId}: ${ownerOfTags(others[0].Tags)} owns instance ${others[0].InstanceId}; ${whoAsks(actor)} may not kill it: refused`);
    const ids = all.map((i) => i.InstanceId!);
    if (ids.length)
      await callAws(`stop ${ids.join(' ')}`, 'the control worker needs ec2:StopInstances on lab-tagged instances', () =>
        this.ec2.send(new StopInstancesCommand({ InstanceIds: ids, Force: true })),
      );
  }

  async list(): Promise<ManagedHost[]> {
    const hosts = new Map<string, ManagedHost>();
    const add = (tags: Tag[] | undefined, resource: string) => {
      const tag = (key: string) => tags?.find((t) => t.Key === key)?.Value;
      const hostId = tag(RESOURCE_TAGS.hostId);
      if (!hostId) return;
      const entry = hosts.get(hostId) ?? {
        hostId,
        runId: tag(RESOURCE_TAGS.runId) ?? '',
        expiresAt: tag(RESOURCE_TAGS.expiresAt) ?? null,
        resources: [],
        foreign: (tag(RESOURCE_TAGS.owner) ?? this.opts.owner) !== this.opts.owner,
      };
      entry.resources.push(resource);
      hosts.set(hostId, entry);
    };
    const labTagged: Filter = { Name: 'tag-key', Values: [RESOURCE_TAGS.hostId] };
    for (const i of await this.describeInstances([labTagged, stateFilter([...LIVE_INSTANCE_STATES, 'shutting-down'])]))
      add(i.Tags, i.InstanceId!);
    for (const v of await this.describeVolumes([labTagged])) add(v.Tags, v.VolumeId!);
    return [...hosts.values()];
  }

  async inspect(hostId: string, actor?: HostActor): Promise<HostInspection> {
    const other = (await this.instancesOf(hostId, null)).find((i) => !actorMatches(i.Tags, actor));
    if (other) return { oomKills: null, text: `host ${hostId}: not described: ${ownerOfTags(other.Tags)} owns instance ${other.InstanceId}, not ${whoAsks(actor)}` };
    // The instance's memory is not partitioned by cgroups on AWS: OOM kills are in its console output, if anywhere.
    return { oomKills: null, text: await this.describeForPeople(hostId) };
  }

  private async describeForPeople(hostId: string): Promise<string> {
    const all = await this.instancesOf(hostId, null);
    const instance = all.sort((a, b) => (b.LaunchTime?.getTime() ?? 0) - (a.LaunchTime?.getTime() ?? 0))[0];
    if (!instance) return `host ${hostId}: no EC2 instance tagged ${RESOURCE_TAGS.hostId}=${hostId} in ${this.opts.region}`;
    const id = instance.InstanceId!;
    const header =
      `host ${hostId}: instance ${id} (${instance.InstanceType}, ${instance.Placement?.AvailabilityZone}) is ${instance.State?.Name}` +
      `${instance.StateReason?.Message ? ` (${instance.StateReason.Message})` : ''}, launched ${instance.LaunchTime?.toISOString() ?? '?'}`;
    const output = await this.consoleOutput(id);
    const text = output
      ? `last ${CONSOLE_LINES} lines of its console output:\n${output.split('\n').slice(-CONSOLE_LINES).join('\n')}`
      : 'no console output yet (EC2 publishes it a few minutes after boot); the bootstrap logs to /var/log/storage-lab-bootstrap.log';
    return `${header}\n${text}`;
  }

  async preflight(spec: ExperimentSpec): Promise<{ problems: string[]; warnings: string[] }> {
    const aws = spec.aws!;
    const warnings: string[] = [];
    const { problems, typeInfo } = await this.accountProblems(aws, spec.host.instanceType, { results: true });
    if (problems.length && !typeInfo) return { problems, warnings };
    const type = spec.host.instanceType;
    const nvme = Object.keys(spec.storageClasses).find((name) => spec.storageClasses[name].kind === 'instance-store');
    const localGB = typeInfo?.InstanceStorageInfo?.TotalSizeInGB ?? 0;
    if (typeInfo && nvme && !localGB)
      problems.push(`storageClasses.${nvme}.kind: instance type ${type} has no instance store; use one with local NVMe (m6id, c6id, i4i, ...) or kind "ebs"`);
    else if (typeInfo && nvme && volumeBytes(spec) > localGB * 1e9)
      problems.push(`data.scale: the data needs about ${Math.ceil(volumeBytes(spec) / 1e9)} GB but ${type} has ${localGB} GB of instance store; lower data.scale or choose a larger type`);
    const vcpus = typeInfo?.VCpuInfo?.DefaultVCpus;
    if (vcpus) {
      // pgbench's transaction logs go to the host folder on the root volume (user-data.sh: /var/lib/storage-lab/host).
      const logBytes = pgbenchLogBytes(spec.workload, vcpus);
      const roomGiB = aws.rootVolumeGiB - ROOT_VOLUME_SYSTEM_GIB;
      if (logBytes > roomGiB * 2 ** 30)
        problems.push(
          `workload.durationSeconds: warm-up and run may write ${(logBytes / 2 ** 30).toFixed(1)} GiB of pgbench transaction logs on a host's root volume (${vcpus} vCPUs at the worst case of ${MAX_TPS_PER_CPU.toLocaleString('en-US')} transactions a second each, ${PGBENCH_LOG_BYTES_PER_TRANSACTION} bytes a line), which has ${roomGiB} GiB beside the system (aws.rootVolumeGiB = ${aws.rootVolumeGiB}); lower workload.durationSeconds or workload.warmupSeconds, or raise aws.rootVolumeGiB to at least ${Math.ceil(logBytes / 2 ** 30) + ROOT_VOLUME_SYSTEM_GIB}`,
        );
    }
    const memoryMiB = typeInfo?.MemoryInfo?.SizeInMiB;
    if (memoryMiB && memoryMiB !== spec.host.memoryLimitMiB)
      warnings.push(`host.memoryLimitMiB: ${spec.host.memoryLimitMiB} MiB is not enforced on AWS, each host has the ${type}'s ${memoryMiB} MiB; set it to ${memoryMiB} so the result says what ran`);
    problems.push(...this.costProblems(spec));
    return { problems, warnings };
  }

  async preflightDrill(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec): Promise<{ problems: string[]; warnings: string[] }> {
    const { problems } = await this.accountProblems(spec.aws!, spec.host.instanceType, { results: false });
    if (problems.length) return { problems, warnings: [] };
    const priced = withPriceFloor(spec, { hourly: this.opts.policy.hourlyPriceUsd, storage: LIST_PRICES_USD.storage });
    return { problems: drillCostProblems(kind, priced, this.ceilingFor(spec.aws?.maxCostUsd)).map((p) => `${p.path}: ${p.message}`), warnings: [] };
  }

  /**
   * What a run's aws section and instance type must be in this account, before anything is created: this worker's
   * region and namespace (and results bucket, for experiments), the lab's Temporal, the subnet, security groups, an
   * image of an allowed owner, and an instance type the zone offers and the operator prices.
   */
  private async accountProblems(aws: AwsSpec, type: string, opts: { results: boolean }): Promise<{ problems: string[]; typeInfo?: InstanceTypeInfo }> {
    const problems: string[] = [];
    if (aws.region !== this.opts.region)
      problems.push(`aws.region: this control worker manages ${this.opts.region} (AWS_REGION); set aws.region to ${this.opts.region}, or run the spec on a control worker for ${aws.region}`);
    if (aws.temporalNamespace !== this.opts.temporalNamespace)
      problems.push(`aws.temporalNamespace: the host agents must poll the namespace this control worker runs in; set it to "${this.opts.temporalNamespace}"`);
    if (opts.results && aws.resultsBucket && aws.resultsBucket !== this.opts.bucket)
      problems.push(`aws.resultsBucket: this control worker writes results to s3://${this.opts.bucket} (STORAGE_LAB_AWS_BUCKET); set aws.resultsBucket to ${this.opts.bucket} or remove it`);
    if (opts.results && aws.resultsPrefix !== this.opts.resultsPrefix)
      problems.push(`aws.resultsPrefix: this control worker writes results below ${this.opts.resultsPrefix} (STORAGE_LAB_RESULTS_PREFIX); set aws.resultsPrefix to it`);
    const address = this.temporalAddressProblem(aws);
    if (address) problems.push(address);
    if (problems.length) return { problems };
    const check = async (field: string, fix: string, fn: () => Promise<string | null>) => {
      try {
        const problem = await fn();
        if (problem) problems.push(`${field}: ${problem}`);
      } catch (err) {
        // The provider's own refusals already name their field and fix.
        if (err instanceof ApplicationFailure && err.type === FAILURE_TYPES.invalidSpec) problems.push(err.message);
        else problems.push(`${field}: ${awsErrorCode(err) || 'error'}: ${(err as Error).message}; ${fix}`);
      }
    };
    let zone: string | undefined;
    await check('aws.subnetId', 'name a subnet of this region', async () => {
      const out = await this.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [aws.subnetId!] }));
      zone = out.Subnets?.[0]?.AvailabilityZone;
      return zone ? null : `subnet ${aws.subnetId} not found in ${this.opts.region}`;
    });
    if (aws.securityGroupIds.length)
      await check('aws.securityGroupIds', 'name security groups of the subnet\'s VPC', async () => {
        await this.ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: aws.securityGroupIds }));
        return null;
      });
    await check(imageField(aws), 'name an AMI of this region (Debian 12 or newer)', async () => {
      const imageId = await this.imageId(aws);
      const out = await this.ec2.send(new DescribeImagesCommand({ ImageIds: [imageId] }));
      const image = out.Images?.[0];
      return image ? this.imageOwnerProblem(image) : `image ${imageId} not found`;
    });
    if (zone)
      await check('host.instanceType', 'choose an instance type this zone offers', async () => {
        const out = await this.ec2.send(
          new DescribeInstanceTypeOfferingsCommand({
            LocationType: 'availability-zone',
            Filters: [{ Name: 'instance-type', Values: [type] }, { Name: 'location', Values: [zone!] }],
          }),
        );
        return out.InstanceTypeOfferings?.length ? null : `${type} is not offered in ${zone} (subnet ${aws.subnetId}); choose a subnet in another zone or another type`;
      });
    let typeInfo: InstanceTypeInfo | undefined;
    await check('host.instanceType', 'use an EC2 instance type name such as m6id.4xlarge', async () => {
      typeInfo = (await this.ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: [type as _InstanceType] }))).InstanceTypes?.[0];
      return typeInfo ? null : `unknown instance type ${type}`;
    });
    const unpriced = this.instanceTypeProblem(type);
    if (unpriced) problems.push(unpriced);
    return { problems, typeInfo };
  }

  /** The host agents must dial this lab's Temporal: they take its tasks and present the credentials the spec names. */
  private temporalAddressProblem(aws: AwsSpec): string | null {
    const wanted = this.opts.policy.temporalAddress;
    if (aws.temporalAddress === undefined || aws.temporalAddress === wanted) return null;
    return `aws.temporalAddress: the host agents must dial this lab's Temporal, ${wanted} (STORAGE_LAB_AWS_TEMPORAL_ADDRESS on the control worker, else its TEMPORAL_ADDRESS): they take its tasks and present the credentials aws.temporalApiKeyParameter names; set aws.temporalAddress to ${wanted}`;
  }

  /**
   * The run's estimate against the lower of aws.maxCostUsd and the operator's ceiling, at prices no lower than the
   * operator's: an instance type the operator has no price for cannot be held to a ceiling, so it is refused.
   */
  private costProblems(spec: ExperimentSpec): string[] {
    const { policy } = this.opts;
    // accountProblems names an instance type without an operator's price; there is no estimate to hold then.
    if (this.instanceTypeProblem(spec.host.instanceType)) return [];
    return costCeilingProblems(withPriceFloor(spec, { hourly: policy.hourlyPriceUsd, storage: LIST_PRICES_USD.storage }), this.ceilingFor(spec.aws?.maxCostUsd)).map(
      (p) => `${p.path}: ${p.message}`,
    );
  }

  /** The lower of the spec's aws.maxCostUsd and the operator's ceiling, and who set it (for the message). */
  private ceilingFor(own: number | undefined): CostCeiling {
    const operator = this.opts.policy.maxCostUsd;
    const operatorBinds = own === undefined || operator < own;
    return {
      usd: operatorBinds ? operator : own,
      field: 'aws.maxCostUsd',
      source: operatorBinds ? "the control worker's ceiling, STORAGE_LAB_AWS_MAX_COST_USD; aws.maxCostUsd can lower it, not raise it" : 'aws.maxCostUsd',
    };
  }

  /** Runs use the instance types the operator prices (a price is what holds a run to the cost ceiling). */
  private instanceTypeProblem(type: string): string | null {
    const priced = Object.keys(this.opts.policy.hourlyPriceUsd);
    if (priced.includes(type)) return null;
    return `host.instanceType: this control worker prices only ${priced.join(', ')} (STORAGE_LAB_AWS_HOURLY_PRICES), so it cannot hold a ${type} run to its cost ceiling; choose one of them, or ask the operator to add ${type}=<USD per hour>`;
  }

  /** An image boots with the lab's host role only when the operator allows its owner (by account id or alias). */
  private imageOwnerProblem(image: Image): string | null {
    const owners = this.opts.policy.imageOwners;
    if (owners.includes(image.OwnerId ?? '') || (image.ImageOwnerAlias && owners.includes(image.ImageOwnerAlias))) return null;
    const owner = `${image.OwnerId ?? 'an unknown account'}${image.ImageOwnerAlias ? ` (${image.ImageOwnerAlias})` : ''}`;
    return `image ${image.ImageId} belongs to ${owner}, not to an owner this control worker allows (${owners.join(', ')}); use an image of one of them, or ask the operator to add its owner to STORAGE_LAB_AWS_IMAGE_OWNERS`;
  }

  /** The run's aws section, checked against this provider. */
  private settingsOf(req: HostRequest): AwsSpec {
    const aws = req.aws;
    if (!aws?.subnetId || !aws.temporalAddress || !aws.instanceProfileName)
      throw ApplicationFailure.nonRetryable(
        `host ${req.hostId}: the request lacks aws.subnetId, aws.temporalAddress or aws.instanceProfileName (preflight checks them)`,
        FAILURE_TYPES.invalidSpec,
      );
    if (aws.region !== this.opts.region)
      throw ApplicationFailure.nonRetryable(
        `aws.region: ${aws.region}, but this control worker manages ${this.opts.region}`,
        FAILURE_TYPES.invalidSpec,
      );
    // Checked again at launch: the drills have no provider preflight.
    const refused = this.temporalAddressProblem(aws) ?? this.instanceTypeProblem(req.instanceType);
    if (refused) throw ApplicationFailure.nonRetryable(refused, FAILURE_TYPES.invalidSpec);
    // Each EC2 host makes its own password at boot; hosts that replicate with each other need one from SSM.
    if (req.passwordScope && !aws.databasePasswordParameter)
      throw ApplicationFailure.nonRetryable(
        `aws.databasePasswordParameter: host ${req.hostId} replicates with other hosts, which on AWS share one database password from SSM; store a SecureString under /storage-lab/ and name it here`,
        FAILURE_TYPES.invalidSpec,
      );
    return aws;
  }

  private async launch(req: HostRequest, aws: AwsSpec): Promise<Instance> {
    const [imageId, agent] = await Promise.all([this.imageId(aws), this.opts.agentPackage.publish()]);
    const image = await callAws(`describe image ${imageId}`, 'set aws.imageId to an AMI of this region', () =>
      this.ec2.send(new DescribeImagesCommand({ ImageIds: [imageId] })),
    );
    const found = image.Images?.[0];
    const rootDevice = found?.RootDeviceName;
    if (!found || !rootDevice)
      throw ApplicationFailure.nonRetryable(`${imageField(aws)}: image ${imageId} not found in ${this.opts.region}`, FAILURE_TYPES.invalidSpec);
    // The preflight checked the owner; checked again here, where the image is about to boot with the host role.
    const owner = this.imageOwnerProblem(found);
    if (owner) throw ApplicationFailure.nonRetryable(`${imageField(aws)}: ${owner}`, FAILURE_TYPES.invalidSpec);
    this.template ??= readUserDataTemplate();
    const userData = renderUserData(this.template, {
      HOST_ID: req.hostId,
      STORAGE_KIND: req.storageClass.kind === 'ebs' ? 'ebs' : 'instance-store',
      POSTGRES_VERSION: req.postgresVersion ? String(req.postgresVersion) : '',
      NODE_VERSION: this.opts.nodeVersion ?? process.versions.node,
      AGENT_S3_URI: `s3://${agent.bucket}/${agent.key}`,
      AGENT_SHA256: agent.sha256,
      WALG_S3_URI: agent.walg ? `s3://${agent.bucket}/${agent.walg.key}` : '',
      WALG_SHA256: agent.walg?.sha256 ?? '',
      WALG_ARCH: agent.walg?.arch ?? '',
      AWS_REGION: this.opts.region,
      AWS_ENDPOINT_URL: this.opts.endpoint ?? '',
      TEMPORAL_ADDRESS: aws.temporalAddress!,
      TEMPORAL_NAMESPACE: aws.temporalNamespace,
      TEMPORAL_API_KEY_PARAMETER: aws.temporalApiKeyParameter ?? '',
      TEMPORAL_TLS_CERT_PARAMETER: aws.temporalTlsCertParameter ?? '',
      TEMPORAL_TLS_KEY_PARAMETER: aws.temporalTlsKeyParameter ?? '',
      DATABASE_PASSWORD_PARAMETER: aws.databasePasswordParameter ?? '',
      HOST_BASE_JSON: JSON.stringify(hostBase(req)),
    });
    const tags = this.tagsOf(req);
    const out = await callAws(
      `start instance for ${req.hostId}`,
      'check host.instanceType, aws.subnetId, aws.securityGroupIds, aws.instanceProfileName and the account\'s vCPU quota',
      () =>
        this.ec2.send(
          new RunInstancesCommand({
            ClientToken: clientToken(req.runId, req.hostId),
            ImageId: imageId,
            InstanceType: req.instanceType as _InstanceType,
            MinCount: 1,
            MaxCount: 1,
            SubnetId: aws.subnetId,
            ...(aws.securityGroupIds.length ? { SecurityGroupIds: aws.securityGroupIds } : {}),
            IamInstanceProfile: { Name: aws.instanceProfileName },
            UserData: Buffer.from(userData).toString('base64'),
            // A shutdown on the host ends the bill instead of leaving a stopped instance behind.
            InstanceInitiatedShutdownBehavior: 'terminate',
            MetadataOptions: { HttpTokens: 'required', HttpEndpoint: 'enabled' },
            BlockDeviceMappings: [
              { DeviceName: rootDevice, Ebs: { VolumeSize: aws.rootVolumeGiB, VolumeType: 'gp3', DeleteOnTermination: true } },
            ],
            TagSpecifications: [{ ResourceType: 'instance', Tags: tags }],
          }),
        ),
    );
    const instance = out.Instances?.[0];
    if (!instance?.InstanceId) throw new Error(`RunInstances for ${req.hostId} returned no instance`);
    return instance;
  }

  /** Creates (or finds) the host's gp3 volume in the instance's zone, attaches it and waits until it is in use. */
  private async ensureDataVolume(req: HostRequest, instance: Instance): Promise<string> {
    const limits = classLimits(req.storageClass)!;
    const instanceId = instance.InstanceId!;
    let volume = (await this.volumesOf(req.hostId, req.runId)).find((v) => v.State !== 'deleting');
    volume ??= await callAws(
      `create the gp3 volume of ${req.hostId}`,
      `check storageClasses.${req.className} (iops, throughputMiBps, sizeGiB) against gp3's limits`,
      () =>
        this.ec2.send(
          new CreateVolumeCommand({
            ClientToken: clientToken(req.runId, req.hostId, 'data-volume'),
            AvailabilityZone: instance.Placement?.AvailabilityZone,
            VolumeType: 'gp3',
            Size: dataVolumeGiB(req.volumeBytes, req.storageClass),
            Iops: limits.iops,
            Throughput: limits.throughputMiBps,
            TagSpecifications: [{ ResourceType: 'volume', Tags: this.tagsOf(req) }],
          }),
        ),
    );
    const volumeId = volume.VolumeId!;
    const attachedHere = volume.Attachments?.some((a) => a.InstanceId === instanceId);
    if (!attachedHere) {
      await this.waitForVolume(volumeId, 'available');
      await callAws(`attach ${volumeId} to ${instanceId}`, 'the volume and the instance must share a zone', () =>
        this.ec2.send(new AttachVolumeCommand({ VolumeId: volumeId, InstanceId: instanceId, Device: DATA_DEVICE })),
      );
    }
    // Whoever terminates the instance (teardown, the sweeper, a person) takes the volume with it.
    await callAws(`mark ${volumeId} delete-on-termination`, 'the control worker needs ec2:ModifyInstanceAttribute', () =>
      this.ec2.send(
        new ModifyInstanceAttributeCommand({
          InstanceId: instanceId,
          BlockDeviceMappings: [{ DeviceName: DATA_DEVICE, Ebs: { DeleteOnTermination: true } }],
        }),
      ),
    );
    await this.waitForVolume(volumeId, 'in-use');
    return volumeId;
  }

  private tagsOf(req: HostRequest): Tag[] {
    return [
      { Key: 'Name', Value: `storage-lab ${req.hostId}` },
      { Key: RESOURCE_TAGS.runId, Value: req.runId },
      { Key: RESOURCE_TAGS.hostId, Value: req.hostId },
      { Key: RESOURCE_TAGS.experiment, Value: req.experiment },
      { Key: RESOURCE_TAGS.expiresAt, Value: req.expiresAt },
      { Key: RESOURCE_TAGS.owner, Value: this.opts.owner },
      ...(req.owner
        ? [
            { Key: RESOURCE_TAGS.workflowId, Value: req.owner.workflowId },
            { Key: RESOURCE_TAGS.execution, Value: req.owner.execution },
          ]
        : []),
    ];
  }

  /** The AMI: the spec's id, or the one a (public) SSM parameter names. */
  private async imageId(aws: AwsSpec): Promise<string> {
    if (aws.imageId) return aws.imageId;
    const out = await callAws(`read SSM parameter ${aws.imageSsmParameter}`, 'set aws.imageSsmParameter to an existing parameter or aws.imageId to an AMI', () =>
      this.opts.clients.ssm.send(new GetParameterCommand({ Name: aws.imageSsmParameter })),
    );
    const value = out.Parameter?.Value;
    // The value is not echoed: only an AMI id is of use, and the message must not carry anything else a parameter holds.
    if (!value || !AMI_ID.test(value))
      throw ApplicationFailure.nonRetryable(`aws.imageSsmParameter: ${aws.imageSsmParameter} does not hold an AMI id; name a parameter that does, or set aws.imageId`, FAILURE_TYPES.invalidSpec);
    return value;
  }

  /** The host's live instance of this run: the first launched, if two attempts ever both launched one. */
  private async findInstance(hostId: string, runId: string): Promise<Instance | undefined> {
    return firstLaunched(await this.liveInstances(hostId, runId));
  }

  private liveInstances(hostId: string, runId: string): Promise<Instance[]> {
    return this.describeInstances([
      { Name: `tag:${RESOURCE_TAGS.hostId}`, Values: [hostId] },
      { Name: `tag:${RESOURCE_TAGS.runId}`, Values: [runId] },
      stateFilter(LIVE_INSTANCE_STATES),
    ]);
  }

  /**
   * After a launch: when two attempts both launched (EC2 honours the ClientToken, an emulator may not; or a retry
   * overlapped the attempt it replaced), every attempt keeps the first launched and terminates the others.
   */
  private async converge(req: HostRequest, launched: Instance): Promise<Instance> {
    const live = await this.liveInstances(req.hostId, req.runId);
    if (!live.some((i) => i.InstanceId === launched.InstanceId)) live.push(launched); // Describe lags a launch.
    const keep = firstLaunched(live)!;
    const extra = live.filter((i) => i.InstanceId !== keep.InstanceId).map((i) => i.InstanceId!);
    if (extra.length) await this.ec2.send(new TerminateInstancesCommand({ InstanceIds: extra }));
    return keep;
  }

  /** Instances tagged with the host id, in the given states (null: any). */
  private instancesOf(hostId: string, states: string[] | null): Promise<Instance[]> {
    return this.describeInstances([
      { Name: `tag:${RESOURCE_TAGS.hostId}`, Values: [hostId] },
      ...(states ? [stateFilter(states)] : []),
    ]);
  }

  /** Volumes tagged with the host id (and run), whatever their state; deleted ones are not listed. */
  private volumesOf(hostId: string, runId?: string): Promise<Volume[]> {
    return this.describeVolumes([
      { Name: `tag:${RESOURCE_TAGS.hostId}`, Values: [hostId] },
      ...(runId ? [{ Name: `tag:${RESOURCE_TAGS.runId}`, Values: [runId] }] : []),
    ]);
  }

  private async describeInstances(filters: Filter[]): Promise<Instance[]> {
    const out: Instance[] = [];
    for await (const page of paginateDescribeInstances({ client: this.ec2 }, { Filters: filters }))
      for (const r of page.Reservations ?? []) out.push(...(r.Instances ?? []));
    return out;
  }

  private async describeVolumes(filters: Filter[]): Promise<Volume[]> {
    const out: Volume[] = [];
    for await (const page of paginateDescribeVolumes({ client: this.ec2 }, { Filters: filters }))
      out.push(...(page.Volumes ?? []).filter((v) => v.State !== 'deleted'));
    return out;
  }

  private async deleteVolume(volumeId: string): Promise<void> {
    try {
      await this.ec2.send(new DeleteVolumeCommand({ VolumeId: volumeId }));
    } catch (err) {
      // Gone already, or still detaching: the next poll sees which.
      if (!['InvalidVolume.NotFound', 'IncorrectState', 'VolumeInUse'].includes(awsErrorCode(err))) throw err;
    }
  }

  private waitForInstance(instanceId: string, state: 'running' | 'terminated'): Promise<Instance> {
    return this.poll(`instance ${instanceId} ${state}`, this.opts.waits?.instanceMinutes ?? 10, async () => {
      const [instance] = await this.describeInstances([{ Name: 'instance-id', Values: [instanceId] }]);
      const now = instance?.State?.Name;
      if (state === 'running' && (now === 'terminated' || now === 'shutting-down' || now === 'stopped'))
        throw ApplicationFailure.nonRetryable(
          `instance ${instanceId} went ${now} while starting${instance?.StateReason?.Message ? `: ${instance.StateReason.Message}` : ''}`,
          FAILURE_TYPES.hostGone,
        );
      return now === state ? instance : null;
    });
  }

  private waitForVolume(volumeId: string, state: 'available' | 'in-use'): Promise<Volume> {
    return this.poll(`volume ${volumeId} ${state}`, this.opts.waits?.volumeMinutes ?? 10, async () => {
      const [volume] = await this.describeVolumes([{ Name: 'volume-id', Values: [volumeId] }]);
      if (!volume || volume.State === 'error')
        throw ApplicationFailure.nonRetryable(`volume ${volumeId} is ${volume?.State ?? 'gone'}`, FAILURE_TYPES.hostGone);
      return volume.State === state ? volume : null;
    });
  }

  /** Calls `check` until it returns a value; a plain (retryable) error when the bound passes. */
  private async poll<T>(what: string, minutes: number, check: () => Promise<T | null>): Promise<T> {
    const deadline = Date.now() + minutes * 60_000;
    const pollMs = this.opts.waits?.pollMs ?? 5_000;
    for (;;) {
      const value = await check();
      if (value !== null) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${minutes} min waiting for ${what}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  private async consoleOutput(instanceId: string): Promise<string> {
    const read = async (latest: boolean) => {
      const out = await this.ec2.send(new GetConsoleOutputCommand({ InstanceId: instanceId, ...(latest ? { Latest: true } : {}) }));
      return out.Output ? Buffer.from(out.Output, 'base64').toString('utf8') : '';
    };
    try {
      return await read(true);
    } catch (err) {
      // The latest output is a Nitro feature; older types give the buffered one.
      if (awsErrorCode(err) === 'UnsupportedOperation') return read(false);
      throw err;
    }
  }
}

/** The field that chose the image: aws.imageId when set, else the SSM parameter. */
function imageField(aws: AwsSpec): string {
  return aws.imageId ? 'aws.imageId' : 'aws.imageSsmParameter';
}

/**
 * Whether an instance's or volume's tags are the actor's: its owner's workflow and execution; for the sweeper, the run
 * it judged; for a request made before claims, a resource made before them too (no workflow tag), of its run's
 * workflow or a child's (`runId` when known). A resource made before claims is its run's workflow's and children's.
 */
function actorMatches(tags: Tag[] | undefined, actor: HostActor | undefined, runId?: string): boolean {
  const tag = (key: string) => tags?.find((t) => t.Key === key)?.Value;
  const workflowId = tag(RESOURCE_TAGS.workflowId);
  const run = tag(RESOURCE_TAGS.runId) ?? '';
  if (!actor) return workflowId === undefined && (runId === undefined || run === runId);
  if ('sweptRun' in actor) return run === actor.sweptRun;
  if (workflowId === undefined) return actor.owner.workflowId === run || actor.owner.workflowId.startsWith(`${run}/`);
  return workflowId === actor.owner.workflowId && tag(RESOURCE_TAGS.execution) === actor.owner.execution;
}

/** Whose a resource is, by its tags, for messages. */
function ownerOfTags(tags: Tag[] | undefined): string {
  const tag = (key: string) => tags?.find((t) => t.Key === key)?.Value;
  const workflowId = tag(RESOURCE_TAGS.workflowId);
  const runId = tag(RESOURCE_TAGS.runId) ?? '';
  return workflowId ? describeClaimant({ runId, workflowId, execution: tag(RESOURCE_TAGS.execution) ?? '?' }) : `run ${JSON.stringify(runId)}`;
}

/** Who asks, for messages. */
function whoAsks(actor: HostActor | undefined, runId?: string): string {
  if (!actor) return `a request of run ${JSON.stringify(runId ?? '?')} that names no owner`;
  return 'sweptRun' in actor ? `the sweeper (for run ${JSON.stringify(actor.sweptRun)})` : describeClaimant({ ...actor.owner, ...(runId ? { runId } : {}) });
}

/** The earliest launched instance; ties go to the smaller id, so concurrent attempts agree. */
function firstLaunched(instances: Instance[]): Instance | undefined {
  const at = (i: Instance) => i.LaunchTime?.getTime() ?? 0;
  return [...instances].sort((a, b) => at(a) - at(b) || (a.InstanceId ?? '').localeCompare(b.InstanceId ?? ''))[0];
}

function stateFilter(states: string[]): Filter {
  return { Name: 'instance-state-name', Values: states };
}

/** An EC2 host as the workflows see it; postgresHost is its private address (empty before launch). */
function hostRecord(req: HostRequest, postgresHost: string): HostRecord {
  const limits = classLimits(req.storageClass);
  return {
    hostId: req.hostId,
    runId: req.runId,
    provider: awsProvider.name,
    className: req.className,
    kind: req.storageClass.kind,
    taskQueue: hostTaskQueue(req.hostId),
    // Real devices: gp3 enforces its provisioned limits itself; instance-store has none.
    emulated: true,
    limits: { iops: limits?.iops ?? null, throughputMiBps: limits?.throughputMiBps ?? null, memoryLimitMiB: null },
    postgres: { host: postgresHost, port: POSTGRES_PORT },
  };
}

/** The host.json of an EC2 host as far as it is known before launch (host-config.ts adds the rest at boot). */
export function hostBase(req: HostRequest): HostConfig {
  return {
    ...hostRecord(req, ''),
    hostDir: HOST_DIR,
    dataDir: `${STORAGE_ROOT}/pgdata`,
    socketDir: `${HOST_DIR}/run`,
    device: null,
    osUser: 'postgres',
    passwordFile: `${HOST_DIR}/secrets/db-password`,
    pgBinDir: '',
    cgroup: null,
  };
}
