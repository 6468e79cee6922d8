/**
 * The host agent's code, as EC2 hosts fetch it: this build (dist/ without tests and benchmarks, package.json and
 * package-lock.json) in one tarball in S3, named by a hash of its contents, uploaded once per build. The host
 * checks the tarball's sha256 and runs `npm ci --omit=dev`, so hosts run exactly the control worker's code.
 * Beside it, the control worker's WAL-G (built by infra/bootstrap.sh: no package has it), named by its version, CPU
 * and hash, uploaded once; the host checks its sha256 too and installs it as /usr/local/bin/wal-g.
 */
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../../lib/process-runner';
import { findWalg } from '../../../lib/walg';
import { parseWalgVersion } from '../../../lib/parsers/walg';
import { listOperatorDir, makeScratchDir, readLabBytes, readOperatorFile, removeLabTree } from '../../../lib/lab-fs';
import { PROJECT_ROOT } from '../../../lib/lab-paths';
import { awsErrorCode } from '../../../lib/aws-errors';

/** A tool binary a host fetches beside the agent: its key, its sha256, its version and the CPU it runs on (Node's name). */
export interface ToolBinaryRef {
  key: string;
  sha256: string;
  version: string;
  arch: string;
}

/** Where a host finds the agent (and WAL-G, when the control worker has it), and how it checks them. */
export interface AgentPackageRef {
  bucket: string;
  key: string;
  sha256: string;
  walg: ToolBinaryRef | null;
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
  /** The WAL-G binary hosts get (default: the tools cache's, else PATH's); null ships none. */
  walgBinary?: string | null;
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
    const [agent, walg] = await Promise.all([this.uploadAgent(), this.uploadWalg()]);
    return { bucket: this.opts.bucket, ...agent, walg };
  }

  private async uploadAgent(): Promise<{ key: string; sha256: string }> {
    const root = this.opts.root ?? PROJECT_ROOT;
    const files = packageFiles(root);
    const key = `${this.opts.prefix}/storage-lab-agent-${contentHash(root, files).slice(0, 20)}.tgz`;
    const sha256 = await this.uploadOnce(key, 'application/gzip', async () => {
      const dir = makeScratchDir('storage-lab-agent-');
      try {
        const tarball = path.join(dir, 'agent.tgz');
        await runProcess('tar', ['-czf', tarball, '--owner=0', '--group=0', '--numeric-owner', '-C', root, ...files]);
        const body = readLabBytes(tarball, { maxBytes: 1024 ** 3 });
        if (!body) throw new Error(`tar made no ${tarball}`);
        return body;
      } finally {
        await removeLabTree(dir);
      }
    });
    return { key, sha256 };
  }

  /** The control worker's WAL-G, for hosts to install; null when it has none (hosts then back up with pgBackRest only). */
  private async uploadWalg(): Promise<ToolBinaryRef | null> {
    const binary = this.opts.walgBinary === undefined ? findWalg() : this.opts.walgBinary;
    if (!binary) return null;
    const { version } = parseWalgVersion((await runProcess(binary, ['--version'])).stdout);
    const body = readOperatorFile(binary);
    const digest = createHash('sha256').update(body).digest('hex');
    const key = `${this.opts.prefix}/wal-g-${version}-linux-${process.arch}-${digest.slice(0, 20)}`;
    const sha256 = await this.uploadOnce(key, 'application/octet-stream', async () => body);
    return { key, sha256, version, arch: process.arch };
  }

  /** Puts an object once: an existing one keeps its recorded sha256; else the body is made, hashed and uploaded with it. */
  private async uploadOnce(key: string, contentType: string, make: () => Promise<Buffer>): Promise<string> {
    const existing = await this.s3
      .send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }))
      .catch((err: unknown) => {
        if (awsErrorCode(err) === 'NotFound' || awsErrorCode(err) === 'NoSuchKey') return null;
        throw err;
      });
    const recorded = existing?.Metadata?.sha256;
    if (recorded) return recorded;
    const body = await make();
    const sha256 = createHash('sha256').update(body).digest('hex');
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.opts.bucket,
        Key: key,
        Body: body,
        ContentType: contentType,
        Metadata: { sha256 },
        ...(this.opts.kmsKeyId ? { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: this.opts.kmsKeyId } : { ServerSideEncryption: 'AES256' }),
      }),
    );
    return sha256;
  }
}

/** Files of the package, relative to the project, sorted. */
export function packageFiles(root: string): string[] {
  const out = ['package.json', 'package-lock.json'];
  const walk = (rel: string) => {
    for (const name of listOperatorDir(path.join(root, rel))) {
      const child = path.posix.join(rel, name);
      const st = lstatSync(path.join(root, child));
      if (st.isDirectory()) {
        if (!SKIPPED.has(child)) walk(child);
      } else if (st.isFile()) out.push(child);
    }
  };
  walk('dist');
  return out.sort();
}

/** A hash of the files' names and contents: the same build gives the same key. */
function contentHash(root: string, files: string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(readOperatorFile(path.join(root, f))).update('\0');
  return h.digest('hex');
}
