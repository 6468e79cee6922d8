/**
 * The host agent's code, as EC2 hosts fetch it: this build (dist/ without tests and benchmarks, package.json and
 * package-lock.json) in one tarball in S3, named by a hash of its contents, uploaded once per build. The host
 * checks the tarball's sha256 and runs `npm ci --omit=dev`, so hosts run exactly the control worker's code.
 */
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runProcess } from '../../../activities/lib/process-runner';
import { PROJECT_ROOT } from '../../lab-paths';
import { awsErrorCode } from './aws-clients';

/** Where a host finds the agent, and how it checks it. */
export interface AgentPackageRef {
  bucket: string;
  key: string;
  sha256: string;
}

export interface AgentPackageSource {
  /** Uploads the package if this build's is not there yet; resolves to where it is. */
  publish(): Promise<AgentPackageRef>;
}

/** dist/ folders a host does not run. */
const SKIPPED = new Set(['dist/test', 'dist/bench']);

export interface S3AgentPackageOptions {
  bucket: string;
  /** Key prefix, e.g. storage-lab/agent. */
  prefix: string;
  /** SSE-KMS key; otherwise SSE-S3 (AES256). */
  kmsKeyId?: string;
  /** The built project (default: this one). */
  root?: string;
}

export class S3AgentPackage implements AgentPackageSource {
  private published: Promise<AgentPackageRef> | null = null;

  constructor(
    private readonly s3: S3Client,
    private readonly opts: S3AgentPackageOptions,
  ) {}

  publish(): Promise<AgentPackageRef> {
    // One upload per process; a failed one is tried again by the next caller.
    this.published ??= this.upload().catch((err) => {
      this.published = null;
      throw err;
    });
    return this.published;
  }

  private async upload(): Promise<AgentPackageRef> {
    const root = this.opts.root ?? PROJECT_ROOT;
    const files = packageFiles(root);
    const key = `${this.opts.prefix}/storage-lab-agent-${contentHash(root, files).slice(0, 20)}.tgz`;
    const existing = await this.s3
      .send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }))
      .catch((err: unknown) => {
        if (awsErrorCode(err) === 'NotFound' || awsErrorCode(err) === 'NoSuchKey') return null;
        throw err;
      });
    const recorded = existing?.Metadata?.sha256;
    if (recorded) return { bucket: this.opts.bucket, key, sha256: recorded };

    const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-agent-'));
    try {
      const tarball = path.join(dir, 'agent.tgz');
      await runProcess('tar', ['-czf', tarball, '--owner=0', '--group=0', '--numeric-owner', '-C', root, ...files]);
      const body = readFileSync(tarball);
      const sha256 = createHash('sha256').update(body).digest('hex');
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.opts.bucket,
          Key: key,
          Body: body,
          ContentType: 'application/gzip',
          Metadata: { sha256 },
          ...(this.opts.kmsKeyId
            ? { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: this.opts.kmsKeyId }
            : { ServerSideEncryption: 'AES256' }),
        }),
      );
      return { bucket: this.opts.bucket, key, sha256 };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Files of the package, relative to the project, sorted. */
export function packageFiles(root: string): string[] {
  const out = ['package.json', 'package-lock.json'];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.posix.join(rel, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED.has(child)) walk(child);
      } else if (entry.isFile()) out.push(child);
    }
  };
  walk('dist');
  return out.sort();
}

/** A hash of the files' names and contents: the same build gives the same key. */
function contentHash(root: string, files: string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(readFileSync(path.join(root, f))).update('\0');
  return h.digest('hex');
}
