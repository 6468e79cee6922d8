/**
 * Started by the global setup beside the suite's Temporal dev server: when jest ends without its global teardown (a
 * signal, an OOM kill), this runs that teardown, so no dev server, host or folder of the suite outlives it. Seen: a
 * suite stopped with a signal left its dev server at 9 % of a core under the next run (docs/benchmarks.md).
 * It ends by itself as soon as the server has gone (the teardown ran), and acts only on the very process it was given
 * (same pid and start time), never on one that later got its pid.
 * Usage (from global-setup.ts): node suite-watchdog.js <jest pid> <server pid>, with the suite's variables set.
 */
import { readFileSync } from 'node:fs';

const POLL_MS = 2_000;

/** A process's start time (field 22 of /proc/<pid>/stat), or null when it is gone or a zombie. */
function started(pid: number): string | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : fields[19];
  } catch {
    return null;
  }
}

const [jestPid, serverPid] = process.argv.slice(2).map(Number);
const jest = started(jestPid);
const server = started(serverPid);
if (jest !== null && server !== null) {
  const timer = setInterval(() => {
    if (started(serverPid) !== server) return clearInterval(timer);
    if (started(jestPid) === jest) return;
    clearInterval(timer);
    console.error(`suite watchdog: jest (pid ${jestPid}) ended without its teardown; tearing the suite down`);
    // Loaded only now: the watchdog sleeps through the suite at a few MB.
    import('./global-teardown')
      .then((m) => m.default())
      .catch((err: unknown) => console.error(`suite watchdog: ${String(err)}`));
  }, POLL_MS);
}
