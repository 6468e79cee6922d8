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
import { awsErrorCode } from './aws-errors';
import { checkRunClaim, legacyFolderOf, RUN_CLAIM_KEY, runClaim, runFolderOf, runOfFolder, safeKey, type ResultsStore, type RunKey } from './results-store';

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
  /** Runs whose results live under their folder from before the escaping (its claim names them), by run. */
  private readonly legacy = new Map<string, boolean>();

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
    await this.resolve(run);
    await this.claimPrefix(run);
    await this.putObject(`${this.runPrefix(run)}/${safeKey(key)}`, body);
  }

  /** The run's claim of its prefix: made by the first write with a conditional put, checked by every write. */
  private async claimPrefix(run: RunKey): Promise<void> {
    checkRunClaim(run, this.location(run), await this.createOnce(`${this.runPrefix(run)}/${RUN_CLAIM_KEY}`, runClaim(run)));
  }

  /** Puts an object unless it exists (If-None-Match: *: of two writers exactly one wins); returns what is stored. */
  private async createOnce(objectKey: string, value: string): Promise<string> {
    try {
      await this.putObject(objectKey, value, true);
      return value;
    } catch (err) {
      const code = awsErrorCode(err);
      if (code !== 'PreconditionFailed' && code !== 'ConditionalRequestConflict') throw err;
    }
    return (await this.getObject(objectKey)) ?? '';
  }

  async claim(run: RunKey, key: string, value: string): Promise<string> {
    await this.resolve(run);
    await this.claimPrefix(run);
    return this.createOnce(`${this.runPrefix(run)}/${safeKey(key)}`, value);
  }

  /** One object, encrypted at rest; `once`: only if there is none yet. */
  private async putObject(objectKey: string, body: string, once = false): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.opts.bucket,
        Key: objectKey,
        Body: body,
        ContentType: CONTENT_TYPES[path.extname(objectKey)] ?? 'text/plain; charset=utf-8',
        ...(once ? { IfNoneMatch: '*' } : {}),
        ...(this.opts.kmsKeyId
          ? { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: this.opts.kmsKeyId }
          : { ServerSideEncryption: 'AES256' }),
      }),
    );
  }

  async get(run: RunKey, key: string): Promise<string | null> {
    await this.resolve(run);
    return this.getObject(`${this.runPrefix(run)}/${safeKey(key)}`);
  }

  private async getObject(objectKey: string): Promise<string | null> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: objectKey }));
      return (await out.Body?.transformToString('utf8')) ?? '';
    } catch (err) {
      if (awsErrorCode(err) === 'NoSuchKey') return null;
      throw err;
    }
  }

  /** Keys directly below a prefix of the run (not deeper), as the folder store lists a folder. */
  async list(run: RunKey, prefix: string): Promise<string[]> {
    await this.resolve(run);
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
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) runs.push(runOfFolder(p.Prefix.slice(root.length).replace(/\/$/, '')));
    return runs.sort();
  }

  /**
   * Whether a run's results are under its folder from before the escaping: only when nothing is under today's and
   * the old folder's claim names this run exactly. Looked up once per run.
   */
  private async resolve(run: RunKey): Promise<void> {
    const legacy = legacyFolderOf(run);
    if (!legacy || typeof run !== 'string' || this.legacy.has(run)) return;
    const join = (folder: string) => [this.prefix, folder, RUN_CLAIM_KEY].filter(Boolean).join('/');
    const current = await this.getObject(join(runFolderOf(run)));
    this.legacy.set(run, current === null && (await this.getObject(join(legacy))) === runClaim(run));
  }

  private runPrefix(run: RunKey): string {
    const folder = typeof run === 'string' && this.legacy.get(run) ? legacyFolderOf(run)! : runFolderOf(run);
    return [this.prefix, folder].filter(Boolean).join('/');
  }
}
