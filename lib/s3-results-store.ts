/**
 * Results in S3: every key of a run below `<prefix>/<run>/` in one bucket, each object encrypted at rest
 * (SSE-S3, or SSE-KMS with a key id). The same interface as the folder store, so nothing else changes on AWS.
 */
import {
  GetObjectCommand,
  PutObjectCommand,
  paginateListObjectsV2,
  type S3Client,
} from '@aws-sdk/client-s3';
import path from 'node:path';
import { awsErrorCode } from './aws-clients';
import { checkRunClaim, RUN_CLAIM_KEY, runClaim, runFolderOf, safeKey, type ResultsStore, type RunKey } from './results-store';

export interface S3ResultsStoreOptions {
  bucket: string;
  /** Key prefix of all runs, e.g. storage-lab/results. */
  prefix: string;
  /** SSE-KMS key id or ARN; unset: SSE-S3 (AES256). */
  kmsKeyId?: string;
}

const CONTENT_TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.md': 'text/markdown; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.csv': 'text/csv',
};

export class S3ResultsStore implements ResultsStore {
  private readonly prefix: string;

  constructor(
    private readonly s3: S3Client,
    private readonly opts: S3ResultsStoreOptions,
  ) {
    this.prefix = opts.prefix.replace(/^\/+|\/+$/g, '');
  }

  location(run: RunKey): string {
    return `s3://${this.opts.bucket}/${this.runPrefix(run)}`;
  }

  async put(run: RunKey, key: string, body: string): Promise<void> {
    const claimed = await this.get(run, RUN_CLAIM_KEY);
    if (claimed === null) await this.putObject(`${this.runPrefix(run)}/${RUN_CLAIM_KEY}`, runClaim(run));
    checkRunClaim(run, this.location(run), claimed);
    await this.putObject(`${this.runPrefix(run)}/${safeKey(key)}`, body);
  }

  /** One object, encrypted at rest. */
  private async putObject(objectKey: string, body: string): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.opts.bucket,
        Key: objectKey,
        Body: body,
        ContentType: CONTENT_TYPES[path.extname(objectKey)] ?? 'text/plain; charset=utf-8',
        ...(this.opts.kmsKeyId
          ? { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: this.opts.kmsKeyId }
          : { ServerSideEncryption: 'AES256' }),
      }),
    );
  }

  async get(run: RunKey, key: string): Promise<string | null> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: `${this.runPrefix(run)}/${safeKey(key)}` }));
      return (await out.Body?.transformToString('utf8')) ?? '';
    } catch (err) {
      if (awsErrorCode(err) === 'NoSuchKey') return null;
      throw err;
    }
  }

  /** Keys directly below a prefix of the run (not deeper), as the folder store lists a folder. */
  async list(run: RunKey, prefix: string): Promise<string[]> {
    const base = `${this.runPrefix(run)}/`;
    const below = `${base}${safeKey(prefix.replace(/^\/+|\/+$/g, ''), 'prefix')}/`;
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2({ client: this.s3 }, { Bucket: this.opts.bucket, Prefix: below, Delimiter: '/' }))
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key.slice(base.length));
    return keys.sort();
  }

  async runs(): Promise<string[]> {
    const runs: string[] = [];
    const root = this.prefix ? `${this.prefix}/` : '';
    for await (const page of paginateListObjectsV2({ client: this.s3 }, { Bucket: this.opts.bucket, Prefix: root, Delimiter: '/' }))
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) runs.push(p.Prefix.slice(root.length).replace(/\/$/, ''));
    return runs.sort();
  }

  private runPrefix(run: RunKey): string {
    return [this.prefix, runFolderOf(run)].filter(Boolean).join('/');
  }
}
