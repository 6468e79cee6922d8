/**
 * The watchdog's decisions (common/core/postgres-silence.ts, lib/postgres-probe.ts, activities/host/watchdog.ts):
 * its limit from the step's heartbeat timeout, what counts as hearing from the server, when a silence is fatal,
 * what the failure says, and the /proc state it reads, each on data made to break it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseError } from 'pg';
import { describeProcesses, notAnsweringMessage, silenceVerdict, silenceWatch, SilenceClock } from '../../common/core/postgres-silence';
import { FAILURE_TYPES, NON_RETRYABLE_FAILURE_TYPES } from '../../common/core/errors';
import { parsePidStatState } from '../../lib/parsers/proc';
import { PROBE_APPLICATION_NAME, probeOutcomeOf } from '../../lib/postgres-probe';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { stepOf } from '../../activities/host/watchdog';

describe('the watchdog of a host activity', () => {
  it('waits as long as the step lets its agent be silent, and looks a tenth as often (0.5-5 s)', () => {
    expect(silenceWatch(60_000)).toEqual({ limitMs: 60_000, probeEveryMs: 5_000 });
    expect(silenceWatch(20_000)).toEqual({ limitMs: 20_000, probeEveryMs: 2_000 });
    expect(silenceWatch(120_000)).toEqual({ limitMs: 120_000, probeEveryMs: 5_000 });
    expect(silenceWatch(3_000)).toEqual({ limitMs: 3_000, probeEveryMs: 500 });
    // No heartbeat timeout (the agent's hello), or nonsense: not watched.
    for (const none of [undefined, 0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(silenceWatch(none)).toBeNull();
  });

  it('hears a reply or a refusal, never a probe left unanswered, and never goes back in time', () => {
    const clock = new SilenceClock(1_000);
    expect(clock.silentMs(500)).toBe(0);
    clock.record('no reply', 9_000);
    expect(clock.silentMs(10_000)).toBe(9_000);
    clock.record('refused', 10_000);
    expect(clock.silentMs(10_000)).toBe(0);
    clock.record('reply', 30_000);
    // An outcome that settles late, stamped earlier, does not shorten what is known.
    clock.record('reply', 20_000);
    expect(clock.silentMs(35_000)).toBe(5_000);
  });

  it('is fine within one probe period, waits (and heartbeats) past it, and calls the server dead at the limit exactly', () => {
    const watch = { limitMs: 20_000, probeEveryMs: 2_000 };
    expect(silenceVerdict(0, watch)).toBe('fine');
    expect(silenceVerdict(2_000, watch)).toBe('fine');
    expect(silenceVerdict(2_001, watch)).toBe('waiting');
    expect(silenceVerdict(19_999, watch)).toBe('waiting');
    expect(silenceVerdict(20_000, watch)).toBe('dead');
    expect(silenceVerdict(3_600_000, watch)).toBe('dead');
  });

  it('takes any message of the server as a reply, a refused socket as not running, anything else as silence', () => {
    const fromServer = new DatabaseError('the database system is starting up', 0, 'error');
    expect(probeOutcomeOf(fromServer)).toBe('reply');
    expect(probeOutcomeOf(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('refused');
    expect(probeOutcomeOf(Object.assign(new Error('connect ENOENT /tmp/.s.PGSQL.5432'), { code: 'ENOENT' }))).toBe('refused');
    expect(probeOutcomeOf(Object.assign(new Error('connect EAGAIN'), { code: 'EAGAIN' }))).toBe('no reply');
    expect(probeOutcomeOf(new Error('Connection terminated unexpectedly'))).toBe('no reply');
    expect(probeOutcomeOf({ code: 57014 })).toBe('no reply');
    expect(probeOutcomeOf(null)).toBe('no reply');
    // A retry's cleanup ends the lab's backends by "storage-lab %": never the watch of the attempt running it.
    expect(PROBE_APPLICATION_NAME).not.toMatch(/^storage-lab /);
  });

  it('names the step by the input label, the activity, or its own name', () => {
    expect(stepOf('runPgbench', { hostId: 'h', label: 'tps' })).toBe('tps');
    expect(stepOf('runPgbench', { hostId: 'h', label: 'warmup' })).toBe('warmup');
    expect(stepOf('loadData', { hostId: 'h' })).toBe('load');
    expect(stepOf('runVacuumPhase', { hostId: 'h', label: '' })).toBe('vacuum');
    expect(stepOf('runBacklogPhase', { hostId: 'h', label: 7 })).toBe('backlog');
    expect(stepOf('takeBackup', null)).toBe('takeBackup');
    expect(stepOf('toString', undefined)).toBe('toString');
  });
});

describe('the failure of a server that stopped answering', () => {
  it('says which of its processes are stopped, or that none is', () => {
    const procs = (...states: string[]) => states.map((state, i) => ({ pid: 100 + i, state }));
    expect(describeProcesses(procs('T', 'T', 'T'))).toBe('3 of its 3 processes stopped (state T: SIGSTOP or a debugger)');
    expect(describeProcesses(procs('S', 't', 'R'))).toBe('1 of its 3 processes stopped (state T: SIGSTOP or a debugger)');
    expect(describeProcesses(procs('T'))).toBe('1 of its 1 process stopped (state T: SIGSTOP or a debugger)');
    expect(describeProcesses(procs('S', 'D', 'S', 'R', 'Z'))).toBe('none of its 5 processes stopped (states D 1, R 1, S 2, Z 1): the server hangs inside (locks, I/O, memory)');
    expect(describeProcesses(null)).toBe('no postmaster found (postmaster.pid missing or not running)');
  });

  it('names the host, the silence in whole seconds, the step and the bound, and is final', () => {
    const message = notAnsweringMessage({ hostId: 'lab-x-gp3-0', step: 'tps', silentMs: 30_999, limitMs: 30_000, processes: '9 of its 9 processes stopped (state T: SIGSTOP or a debugger)' });
    expect(message).toBe(
      "host lab-x-gp3-0: PostgreSQL stopped answering (no reply for 30 s) during step tps; 9 of its 9 processes stopped (state T: SIGSTOP or a debugger); not retried: a server silent for the step's bound (30 s, at most host.deadAfterSeconds) would keep a retry on this host waiting as long",
    );
    expect(NON_RETRYABLE_FAILURE_TYPES).toContain(FAILURE_TYPES.postgresNotAnswering);
  });

  it("reads a process's state and parent from /proc/<pid>/stat, whatever its name holds", () => {
    const text = readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'linux-6.18', 'pid-stat.txt'), 'utf8');
    expect(parsePidStatState(text)).toEqual({ state: 'S', ppid: 11217 });
    expect(parsePidStatState(text.replace(' S 11217 ', ' T 11217 '))).toEqual({ state: 'T', ppid: 11217 });
    // A name made to look like the fields: only what follows the last ")" counts.
    expect(parsePidStatState(text.replace('(postgres)', '(x) T 1 (y)'))).toEqual({ state: 'S', ppid: 11217 });
    expect(() => parsePidStatState('1 (x)')).toThrow(/state\/ppid/);
    expect(() => parsePidStatState('1 (x) SS 2')).toThrow(/state\/ppid/);
  });
});
