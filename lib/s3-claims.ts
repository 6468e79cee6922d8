/**
 * Owner records in S3 (lib/claims.ts has the file ones): a conditional put that only the first claimant's succeeds.
 * Apart so that the local paths that claim files do not load the AWS SDK.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { OwnerRecord } from '../common/core/claims';
import { awsErrorCode } from './aws-errors';
import { ownedByAnotherRun, parseRecord } from './claims';

/** Claims an S3 key the same way: a conditional put (If-None-Match: *) that only the first claimant's succeeds. */
export async function claimS3Object(s3: S3Client, bucket: string, key: string, record: OwnerRecord): Promise<OwnerRecord> {
  try {
    await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(record, null, 2), ContentType: 'application/json', IfNoneMatch: '*', ServerSideEncryption: 'AES256' }),
    );
    return record;
  } catch (err) {
    const code = awsErrorCode(err);
    // 412: the object exists; 409: another conditional put of it is in flight (S3 says try again).
    if (code !== 'PreconditionFailed' && code !== 'ConditionalRequestConflict') throw err;
  }
  const existing = await readS3Claim(s3, bucket, key);
  if (!existing) throw new Error(`s3://${bucket}/${key} vanished while it was claimed; try again`);
  return existing;
}

/** The owner record at an S3 key, or null when there is none. */
export async function readS3Claim(s3: S3Client, bucket: string, key: string): Promise<OwnerRecord | null> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const text = (await out.Body?.transformToString('utf8')) ?? '';
    const record = parseRecord(text);
    if (!record) throw ownedByAnotherRun(`s3://${bucket}/${key} is not an owner record the lab wrote; the resource is refused`);
    return record;
  } catch (err) {
    if (awsErrorCode(err) === 'NoSuchKey') return null;
    throw err;
  }
}
