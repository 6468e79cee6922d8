/**
 * VACUUM (VERBOSE) output → typed results. Pure; tested on output captured from real servers
 * (test/fixtures/postgres-15). The input is the INFO messages as psql prints them ("INFO:  ..." lines); the vacuum
 * activity joins the notices it receives over its connection into the same text.
 */
import type { VacuumVerboseReport } from '../../common/results/sampler-readings';

const FINISHED_RE = /^(?:INFO:\s+)?finished vacuuming "(?<rel>[^"]+)": index scans: (?<scans>\d+)\s*$/;

/** Parses every relation VACUUM (VERBOSE) reported on; throws when a relation's report lacks a line it always has. */
export function parseVacuumVerbose(text: string): VacuumVerboseReport[] {
  const lines = text.split(/\r?\n/);
  const starts = lines.flatMap((line, i) => (FINISHED_RE.test(line) ? [i] : []));
  return starts.map((start, n) => parseSection(lines.slice(start, starts[n + 1] ?? lines.length)));
}

function parseSection(lines: string[]): VacuumVerboseReport {
  const head = FINISHED_RE.exec(lines[0])!.groups!;
  const body = lines.slice(1).join('\n');
  const required = (re: RegExp, what: string): RegExpExecArray => {
    const m = re.exec(body);
    if (!m) throw new Error(`VACUUM VERBOSE report of ${head.rel} has no "${what}" line`);
    return m;
  };
  const num = (s: string) => Number(s);
  const pages = required(/^pages: (\d+) removed, (\d+) remain, (\d+) scanned/m, 'pages');
  const tuples = required(/^tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable/m, 'tuples');
  const rates = required(/^avg read rate: ([\d.]+) MB\/s, avg write rate: ([\d.]+) MB\/s/m, 'avg read rate');
  const buffers = required(/^buffer usage: (\d+) hits, (\d+) (?:misses|reads), (\d+) dirtied/m, 'buffer usage');
  const wal = required(/^WAL usage: (\d+) records, (\d+) full page images, (\d+) bytes/m, 'WAL usage');
  const cpu = required(/^system usage: CPU: user: ([\d.]+) s, system: ([\d.]+) s, elapsed: ([\d.]+) s/m, 'system usage');
  // A non-aggressive VACUUM that cannot get a page's cleanup lock leaves its dead tuples (PostgreSQL 15+).
  const missed = /^tuples missed: (\d+) dead from (\d+) pages not removed due to cleanup lock contention/m.exec(body);
  const deadItems = /^index scan (?:not )?needed: (\d+) pages from table \([\d.]+% of total\) had (\d+) dead item identifiers removed/m.exec(body);
  const io = /^I\/O timings: read: ([\d.]+) ms, write: ([\d.]+) ms/m.exec(body);
  const indexes = [...body.matchAll(/^index "([^"]+)": pages: (\d+) in total, (\d+) newly deleted, (\d+) currently deleted, (\d+) reusable/gm)].map(
    (m) => ({ name: m[1], pages: num(m[2]), newlyDeleted: num(m[3]), currentlyDeleted: num(m[4]), reusable: num(m[5]) }),
  );
  return {
    relation: head.rel,
    indexScans: num(head.scans),
    pages: { removed: num(pages[1]), remain: num(pages[2]), scanned: num(pages[3]) },
    tuples: { removed: num(tuples[1]), remain: num(tuples[2]), deadNotYetRemovable: num(tuples[3]) },
    missedDead: missed ? { tuples: num(missed[1]), pages: num(missed[2]) } : { tuples: 0, pages: 0 },
    deadItems: deadItems ? { pages: num(deadItems[1]), identifiersRemoved: num(deadItems[2]) } : null,
    indexes,
    ioTimingsMs: io ? { read: num(io[1]), write: num(io[2]) } : null,
    avgReadMBps: num(rates[1]),
    avgWriteMBps: num(rates[2]),
    buffers: { hits: num(buffers[1]), misses: num(buffers[2]), dirtied: num(buffers[3]) },
    wal: { records: num(wal[1]), fullPageImages: num(wal[2]), bytes: num(wal[3]) },
    cpu: { userSeconds: num(cpu[1]), systemSeconds: num(cpu[2]), elapsedSeconds: num(cpu[3]) },
  };
}
