/**
 * storage-lab datasets list|rm: the published data sets of a store (issue 31): the local backups folder (or a
 * sub-folder of it), or an S3 store (--s3-bucket; this process's AWS credentials), read and removed in this process
 * (no worker needed): key, state, rows, size, the seconds its load and publish took, who published it
 * and when it expires. `rm` removes the manifest first, so no run starts restoring a set being removed; a set another
 * run is still building is left alone unless --force.
 */
import { isDataSetKey } from '../../common/input/data-set';
import { BackupStoreSchema, type BackupStoreSpec } from '../../common/input/spec';
import { dataSetCatalog, listDataSets, removeDataSet, type DataSetEntry } from '../../lib/data-sets';
import { UserError } from '../errors';
import { labPaths, registerLabPaths } from '../../lib/lab-paths';

export interface DatasetsFlags {
  /** A folder store's path below the backups folder (a spec's durability.backupStore.path). */
  storePath?: string;
  /** An S3 store (a spec's durability.backupStore with kind "s3"): bucket, key prefix, region, endpoint. */
  s3Bucket?: string;
  s3Prefix?: string;
  s3Region?: string;
  s3Endpoint?: string;
  json?: boolean;
  force?: boolean;
}

/** The store the flags name, checked by the spec's own rules (a field's problem names its flag). */
export function storeOf(flags: DatasetsFlags): BackupStoreSpec {
  const s3 = flags.s3Bucket !== undefined || flags.s3Prefix !== undefined || flags.s3Region !== undefined || flags.s3Endpoint !== undefined;
  if (s3 && flags.storePath !== undefined) throw new UserError('--store-path names a folder store and --s3-* an S3 store; give one of them');
  const raw = s3
    ? { kind: 's3', bucket: flags.s3Bucket, prefix: flags.s3Prefix, region: flags.s3Region, endpoint: flags.s3Endpoint }
    : { kind: 'folder', path: flags.storePath };
  const parsed = BackupStoreSchema.safeParse(JSON.parse(JSON.stringify(raw)));
  if (!parsed.success) {
    const flag = (field: string) => (s3 ? `--s3-${field}` : '--store-path');
    throw new UserError(parsed.error.issues.map((i) => `${flag(String(i.path[0] ?? 'bucket'))}: ${i.message}`).join('\n'));
  }
  return parsed.data;
}

function hostsDir(): string {
  const paths = labPaths();
  registerLabPaths(paths);
  return paths.hostsDir;
}

const gib = (b: number | null | undefined) => (b === null || b === undefined ? '–' : `${(b / 2 ** 30).toFixed(2)} GiB`);

/** One line a person reads per set. */
export function datasetLine(s: DataSetEntry): string {
  if (s.state === 'broken') return `${s.key}  broken: ${s.problem}`;
  if (s.state === 'building') return `${s.key}  building by ${s.claim?.workflowId ?? '?'} since ${s.claim?.claimedAt ?? '?'}`;
  const m = s.manifest!;
  return (
    `${s.key}  published  PostgreSQL ${m.parts.postgresMajor}, scale ${m.parts.scale}, ${m.rows.toLocaleString('en-US')} rows, database ${gib(m.facts.databaseBytes)}, backup ${gib(m.backup.repositoryBytes)}; ` +
    `load ${m.loadSeconds.toFixed(1)} s, publish ${m.publishSeconds.toFixed(1)} s; by ${m.source.hostId} of ${m.source.runId} at ${m.publishedAt}; expires ${m.expiresAt}`
  );
}

export async function datasetsListCommand(flags: DatasetsFlags): Promise<DataSetEntry[]> {
  const sets = await listDataSets(await dataSetCatalog(storeOf(flags), hostsDir()));
  if (flags.json) console.log(JSON.stringify(sets, null, 2));
  else if (!sets.length) console.log('No data sets.');
  else for (const s of sets) console.log(datasetLine(s));
  return sets;
}

export async function datasetsRmCommand(keys: string[], flags: DatasetsFlags): Promise<void> {
  const catalog = await dataSetCatalog(storeOf(flags), hostsDir());
  const sets = new Map((await listDataSets(catalog)).map((s) => [s.key, s]));
  for (const key of keys) {
    if (!isDataSetKey(key)) {
      console.error(`${JSON.stringify(key)} is not a data set key (ds- and 26 base-32 characters); see storage-lab datasets list`);
      process.exitCode = 1;
      continue;
    }
    const set = sets.get(key);
    if (!set) {
      console.error(`no data set ${key}`);
      process.exitCode = 1;
      continue;
    }
    if (set.state === 'building' && !flags.force) {
      console.error(`data set ${key} is being built by ${set.claim?.workflowId}; left alone (--force removes it anyway)`);
      process.exitCode = 1;
      continue;
    }
    console.log(await removeDataSet(catalog, key, 'asked for'));
  }
}
