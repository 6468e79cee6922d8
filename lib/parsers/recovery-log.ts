/**
 * A Postgres server log of one archive recovery → when each step happened, by the server's own clock: WAL replay
 * start and end, where recovery stopped, promotion (new timeline, ready for writes), or the FATAL that ended it.
 * Expects `log_line_prefix = '%m [%p] '` and `log_timezone = 'UTC'` (the drills set both).
 * Tested on real PostgreSQL 15 logs in test/fixtures/postgres-15/recovery-*.txt.
 */

export interface RecoveryLog {
  startedAt: string | null;
  redoStartAt: string | null;
  consistentAt: string | null;
  /** "recovery stopping before commit of transaction 741, time ..." (a time, LSN or xid target). */
  stopped: { at: string; message: string } | null;
  redoDoneAt: string | null;
  redoDoneLsn: string | null;
  lastTransactionAt: string | null;
  newTimeline: number | null;
  /** Ready for writes: "database system is ready to accept connections" (not the read-only one). */
  readyAt: string | null;
  /** The first FATAL or PANIC, with its DETAIL/HINT lines. */
  fatal: { at: string; message: string } | null;
  /** WAL segments restored from the archive, in order (a segment restored twice appears twice). */
  restoredSegments: string[];
}

/**
 * A client turned away while the server is not yet open (SQLSTATE 57P03, cannot_connect_now): the FATAL of that
 * client's connection, logged by its backend, not the recovery's. Seen in a drill on a loaded machine ("the database
 * system is not yet accepting connections", before consistency), which was read as the recovery failing.
 */
const CLIENT_TURNED_AWAY = /^the database system is (starting up|not yet accepting connections|not accepting connections|in recovery mode|shutting down)\b/;

const LINE = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?) (UTC|GMT) \[\d+\] (\w+):\s+(.*)$/;

/** Parses one recovery's log; lines before the first server start and after the first "ready" are ignored. */
export function parseRecoveryLog(text: string): RecoveryLog {
  const out: RecoveryLog = {
    startedAt: null,
    redoStartAt: null,
    consistentAt: null,
    stopped: null,
    redoDoneAt: null,
    redoDoneLsn: null,
    lastTransactionAt: null,
    newTimeline: null,
    readyAt: null,
    fatal: null,
    restoredSegments: [],
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && !out.readyAt; i++) {
    const m = LINE.exec(lines[i]);
    if (!m) continue;
    const at = new Date(`${m[1]}T${m[2]}Z`).toISOString();
    const [level, message] = [m[4], m[5]];
    if (level === 'FATAL' && CLIENT_TURNED_AWAY.test(message)) continue;
    if (level === 'FATAL' || level === 'PANIC') {
      if (!out.fatal) {
        const more: string[] = [];
        for (let j = i + 1; j < lines.length; j++) {
          const cont = LINE.exec(lines[j]);
          if (cont && (cont[4] === 'DETAIL' || cont[4] === 'HINT' || cont[4] === 'CONTEXT')) more.push(`${cont[4]}: ${cont[5]}`);
          else if (/^\s/.test(lines[j])) more.push(lines[j].trim());
          else break;
        }
        out.fatal = { at, message: [message, ...more].join(' ') };
      }
      continue;
    }
    if (level !== 'LOG') continue;
    let g: RegExpExecArray | null;
    if (message.startsWith('starting PostgreSQL')) out.startedAt ??= at;
    else if ((g = /^restored log file "([0-9A-F]{24})" from archive/.exec(message))) out.restoredSegments.push(g[1]);
    else if (message.startsWith('redo starts at')) out.redoStartAt ??= at;
    else if (message.startsWith('consistent recovery state reached')) out.consistentAt ??= at;
    else if (message.startsWith('recovery stopping')) out.stopped ??= { at, message };
    else if ((g = /^redo done at ([0-9A-F]+\/[0-9A-F]+)/.exec(message))) {
      out.redoDoneAt ??= at;
      out.redoDoneLsn ??= g[1];
    } else if ((g = /^last completed transaction was at log time (.+)$/.exec(message)))
      out.lastTransactionAt ??= isoTimestamp(g[1]);
    else if ((g = /^selected new timeline ID: (\d+)/.exec(message))) out.newTimeline ??= Number(g[1]);
    else if (message.startsWith('database system is ready to accept connections')) out.readyAt = at;
  }
  return out;
}

/** "2026-11-30 07:38:54.868076+00" (timestamptz as Postgres prints it) → ISO 8601 in UTC. */
export function isoTimestamp(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)?([+-]\d{2})(?::?(\d{2}))?$/.exec(text.trim());
  if (!m) throw new Error(`not a Postgres timestamp: ${JSON.stringify(text)}`);
  const fraction = (m[3] ?? '').slice(0, 4); // Date keeps milliseconds
  return new Date(`${m[1]}T${m[2]}${fraction}${m[4]}:${m[5] ?? '00'}`).toISOString();
}
