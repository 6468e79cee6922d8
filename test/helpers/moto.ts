/**
 * moto's server: a real AWS API endpoint (EC2, S3, SSM, IAM) for the AWS code paths. Each test file starts one on
 * 127.0.0.1 on a free port, in a temporary folder, points the SDK at it and stops it at the end.
 */
import { CreateSecurityGroupCommand, CreateSubnetCommand, CreateVpcCommand, DescribeImagesCommand } from '@aws-sdk/client-ec2';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { paginateDescribeInstances, paginateDescribeVolumes } from '@aws-sdk/client-ec2';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RESOURCE_TAGS } from '../../common/core/names';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { awsClients, type AwsClients, type AwsConnection } from '../../lib/aws-clients';
import { freePort } from './ports';

export const MOTO_SERVER = path.join(PROJECT_ROOT, '.cache', 'venv', 'bin', 'moto_server');

/** A network for hosts: a VPC, a subnet in one zone, a security group. */
export interface MotoNetwork {
  subnetId: string;
  securityGroupId: string;
  zone: string;
  imageId: string;
  /** The account moto lists as the image's owner (its images are "amazon"'s, under several account ids). */
  imageOwnerId: string;
}

export interface Moto {
  endpoint: string;
  connection: AwsConnection;
  clients: AwsClients;
  /** New clients on the same server (tests add middleware to them). */
  newClients(overrides?: Partial<AwsConnection>): AwsClients;
  createNetwork(zone?: string): Promise<MotoNetwork>;
  createInstanceProfile(name: string): Promise<void>;
  createBucket(name: string): Promise<void>;
  /** Instances not terminated and volumes not deleted that carry the run's tag: [] after a clean run. */
  leftovers(runId: string): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  if (!existsSync(MOTO_SERVER)) throw new Error(`${MOTO_SERVER} is missing: run infra/bootstrap.sh test (installs moto[server])`);
  // The SDK warns once per process that Node 20 support ends in 2027; tests need not repeat it.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dir = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR ?? os.tmpdir(), 'moto-'));
  const port = await freePort();
  const logFile = path.join(dir, 'moto.log');
  const log = openSync(logFile, 'a');
  const child: ChildProcess = spawn(MOTO_SERVER, ['-H', '127.0.0.1', '-p', String(port)], { cwd: dir, stdio: ['ignore', log, log] });
  closeSync(log);
  const endpoint = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilServing(endpoint, child, logFile);
  } catch (err) {
    await stop();
    throw err;
  }

  const connection: AwsConnection = {
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    maxAttempts: 3,
  };
  const clients = awsClients(connection);
  return {
    endpoint,
    connection,
    clients,
    newClients: (overrides = {}) => awsClients({ ...connection, ...overrides }),
    async createNetwork(zone = 'us-east-1b') {
      const vpc = await clients.ec2.send(new CreateVpcCommand({ CidrBlock: '10.20.0.0/16' }));
      const subnet = await clients.ec2.send(
        new CreateSubnetCommand({ VpcId: vpc.Vpc!.VpcId, CidrBlock: '10.20.1.0/24', AvailabilityZone: zone }),
      );
      const sg = await clients.ec2.send(
        new CreateSecurityGroupCommand({ GroupName: 'storage-lab-test', Description: 'storage lab test', VpcId: vpc.Vpc!.VpcId }),
      );
      // Any Linux image moto knows stands in for Debian (it boots nothing).
      const images = await clients.ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }));
      const image = images.Images?.find((i) => i.RootDeviceName && i.Platform !== 'Windows' && i.Architecture === 'x86_64');
      if (!image?.ImageId || !image.OwnerId) throw new Error('moto lists no Linux image');
      return { subnetId: subnet.Subnet!.SubnetId!, securityGroupId: sg.GroupId!, zone, imageId: image.ImageId, imageOwnerId: image.OwnerId };
    },
    async createInstanceProfile(name) {
      // No IAM client in the dependencies: moto answers the query API without checking signatures.
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: 'AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: new URLSearchParams({ Action: 'CreateInstanceProfile', InstanceProfileName: name, Version: '2010-05-08' }),
      });
      if (!res.ok) throw new Error(`CreateInstanceProfile ${name}: ${res.status} ${await res.text()}`);
    },
    async createBucket(name) {
      await clients.s3.send(new CreateBucketCommand({ Bucket: name }));
    },
    async leftovers(runId) {
      const found: string[] = [];
      const byRun = [{ Name: `tag:${RESOURCE_TAGS.runId}`, Values: [runId] }];
      for await (const page of paginateDescribeInstances({ client: clients.ec2 }, { Filters: byRun }))
        for (const r of page.Reservations ?? [])
          for (const i of r.Instances ?? [])
            if (i.State?.Name !== 'terminated') found.push(`instance ${i.InstanceId} ${i.State?.Name}`);
      for await (const page of paginateDescribeVolumes({ client: clients.ec2 }, { Filters: byRun }))
        for (const v of page.Volumes ?? []) if (v.State !== 'deleted') found.push(`volume ${v.VolumeId} ${v.State}`);
      return found;
    },
    stop,
  };
}

async function waitUntilServing(endpoint: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const res = await fetch(`${endpoint}/moto-api/`);
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n') : '';
  throw new Error(`moto_server did not start on ${endpoint} within 30 s:\n${tail}`);
}
