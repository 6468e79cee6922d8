/**
 * The experiment on provider "aws" end to end but for the VMs: the real control worker provisions every host
 * through the Ec2Provider on moto (instances tagged, gp3 volume created and attached, preflight against the
 * account), writes results to S3 with SSE; each host's Postgres and agent are local processes (moto boots no
 * machine). Afterwards moto holds no live instance or volume of the run, and nothing is left on this machine.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { runFolderName } from '../../lib/results-store';
import type { S3ResultsStore } from '../../lib/s3-results-store';
import type { RunCost } from '../../common/input/cost';
import { hostIdFor } from '../../common/core/ids';
import { RESOURCE_TAGS, WORKFLOW_TYPES } from '../../common/core/names';
import type { ExperimentResult } from '../../common/results/result';
import { awsInput, Ec2WithLocalHosts, localProviderFor, startAwsTestbed, TEST_BUCKET, type AwsTestbed } from '../helpers/aws-lab';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';
import { NO_PHASES } from '../helpers/phases';

describe('experiment on AWS (moto) with local hosts', () => {
  let bed: AwsTestbed;
  let lab: TestLab;
  let results: S3ResultsStore;
  const runIds: string[] = [];

  beforeAll(async () => {
    bed = await startAwsTestbed();
    lab = await startTestLab('aws', {
      aws: (paths) => {
        const side = bed.setup();
        results = side.results;
        return { provider: new Ec2WithLocalHosts(side.provider, localProviderFor(paths)), results: side.results };
      },
    });
  });
  afterAll(async () => {
    try {
      await lab?.close();
      if (bed) for (const runId of runIds) expect(await bed.moto.leftovers(runId)).toEqual([]);
    } finally {
      await bed?.moto.stop();
    }
  });

  it('provisions through EC2, measures both classes, stores results and cost in S3, and leaves nothing', async () => {
    const input = awsInput(bed.network, { phases: NO_PHASES });
    const handle = await lab.startExperiment(input);
    runIds.push(handle.workflowId);
    const summary = (await handle.result()) as { status: string; location: string };
    expect(summary.status).toBe('completed');
    expect(summary.location).toBe(`s3://${TEST_BUCKET}/storage-lab/results/${runFolderName(handle.workflowId)}`);

    const result = JSON.parse((await results.get(handle.workflowId, 'result.json'))!) as ExperimentResult;
    expect(Object.keys(result.classes).sort()).toEqual(['gp3', 'nvme']);
    for (const cls of Object.values(result.classes)) {
      expect(cls.clusters).toHaveLength(1);
      expect(cls.clusters[0].status).toBe('ok');
      expect(cls.clusters[0].tps).toBeGreaterThan(0);
    }
    expect(result.classes.gp3.kind).toBe('ebs');
    const cost = result.cost as RunCost;
    expect(cost.estimate.totalUsd).toBeGreaterThan(0);
    expect(cost.actual!.hostHours).toBeGreaterThan(0);
    expect(cost.actual!.hostHours).toBeLessThan(1);
    expect(cost.actual!.lines.find((l) => l.item.startsWith('m6id.4xlarge'))!.quantity).toBe(cost.actual!.hostHours);
    expect(await results.get(handle.workflowId, 'report.md')).toContain('## Cost (AWS list prices)');
    const head = await bed.moto.clients.s3.send(
      new HeadObjectCommand({ Bucket: TEST_BUCKET, Key: `storage-lab/results/${runFolderName(handle.workflowId)}/result.json` }),
    );
    expect(head.ServerSideEncryption).toBe('AES256');

    // Both hosts were real EC2 instances on moto, and both are terminated now.
    const out = await bed.moto.clients.ec2.send(
      new DescribeInstancesCommand({ Filters: [{ Name: `tag:${RESOURCE_TAGS.runId}`, Values: [handle.workflowId] }] }),
    );
    const instances = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    expect(instances.map((i) => i.State?.Name)).toEqual(['terminated', 'terminated']);
    expect(await bed.moto.leftovers(handle.workflowId)).toEqual([]);
    const hostIds = ['nvme', 'gp3'].map((c) => hostIdFor(handle.workflowId, c, 0));
    expect(lab.leftovers(hostIds)).toEqual([]);
  });

  it('fails preflight naming the missing aws fields, and creates nothing', async () => {
    const input = awsInput(bed.network);
    const aws = input.aws as Record<string, unknown>;
    delete aws.subnetId;
    delete aws.temporalAddress;
    const handle = await lab.startExperiment(input);
    runIds.push(handle.workflowId);
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('PreflightError');
    expect(cause.message).toMatch(/aws\.subnetId: is required[\s\S]*aws\.temporalAddress: is required/);
    expect(await bed.moto.leftovers(handle.workflowId)).toEqual([]);
    expect(await results.get(handle.workflowId, 'spec.json')).toBeNull();
  });

  it("refuses a drill on AWS above its cost ceiling in the preflight, before its backup store or any host", async () => {
    const input = { preset: 'ci', provider: 'aws', storageClass: { kind: 'ebs' }, backup: { store: { kind: 's3', bucket: TEST_BUCKET } }, aws: { ...(awsInput(bed.network).aws as object), maxCostUsd: 0.01 } };
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.restoreDrill, { taskQueue: lab.taskQueue, workflowId: uniqueId('aws-drill'), args: [input] });
    runIds.push(handle.workflowId);
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as { type?: string; message: string; nonRetryable?: boolean };
    expect([cause.type, cause.nonRetryable]).toEqual(['PreflightError', true]);
    expect(cause.message).toMatch(/aws\.maxCostUsd: the restore drill is estimated at \$\d+\.\d\d \(2 m6id\.4xlarge hosts .* above its ceiling of \$0\.01 \(aws\.maxCostUsd\)/);
    expect(await bed.moto.leftovers(handle.workflowId)).toEqual([]);
  });
});
