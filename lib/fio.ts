/**
 * fio (the Debian package, a tool nobody here wrote): a run of one job with JSON output, and its figures. The modelled
 * volume is validated with it (lib/volume-fidelity.ts).
 */
import { runProcess } from './process-runner';

/** One fio job's figures (fio --output-format=json, jobs[0]). */
export interface FioResult {
  version: string;
  runtimeSeconds: number;
  readIops: number;
  writeIops: number;
  /** Mean completion latency of a read, a write, an fsync (ms); null where the job did none. */
  readLatencyMs: number | null;
  writeLatencyMs: number | null;
  syncLatencyMs: number | null;
  reads: number;
  writes: number;
  syncs: number;
  readBytes: number;
  writeBytes: number;
}

interface FioDirection {
  io_bytes: number;
  iops: number;
  total_ios: number;
  runtime: number;
  lat_ns: { mean: number; N?: number };
}

/** Parses fio's JSON output (3.x); throws when the job reported an error. */
export function parseFioJson(text: string): FioResult {
  // fio prints warnings before the JSON document on some systems.
  const start = text.indexOf('{');
  const doc = JSON.parse(text.slice(start)) as {
    'fio version': string;
    jobs: ({ error: number; job_runtime: number; read: FioDirection; write: FioDirection; sync: { total_ios: number; lat_ns: { mean: number } } } & Record<string, unknown>)[];
  };
  const job = doc.jobs[0];
  if (!job) throw new Error('fio reported no job');
  if (job.error) throw new Error(`fio's job failed with error ${job.error}`);
  const ms = (d: { lat_ns: { mean: number } }, n: number) => (n > 0 ? d.lat_ns.mean / 1e6 : null);
  return {
    version: doc['fio version'],
    runtimeSeconds: job.job_runtime / 1000,
    readIops: job.read.iops,
    writeIops: job.write.iops,
    readLatencyMs: ms(job.read, job.read.total_ios),
    writeLatencyMs: ms(job.write, job.write.total_ios),
    syncLatencyMs: ms(job.sync, job.sync.total_ios),
    reads: job.read.total_ios,
    writes: job.write.total_ios,
    syncs: job.sync.total_ios,
    readBytes: job.read.io_bytes,
    writeBytes: job.write.io_bytes,
  };
}

/** A fio job: its options as fio's --name=value flags take them (name, filename, rw, bs, iodepth, ...). */
export type FioJob = Record<string, string | number>;

/** Runs one fio job; `wrap` runs it inside something else (a cgroup's shell), as [command, ...args]. */
export async function runFio(job: FioJob, opts: { timeoutMs?: number; wrap?: (argv: string[]) => string[] } = {}): Promise<FioResult> {
  const argv = ['fio', ...Object.entries(job).map(([k, v]) => `--${k}=${v}`), '--output-format=json'];
  const [cmd, ...args] = opts.wrap ? opts.wrap(argv) : argv;
  const out = await runProcess(cmd, args, { timeoutMs: opts.timeoutMs ?? 120_000 });
  return parseFioJson(out.stdout);
}
