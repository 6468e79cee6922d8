/**
 * A fresh Node process that requires modules of dist as a lab process starts, then runs `tail` (a script whose
 * stdout is returned): what it loaded (test/unit/process-imports) or what loading cost (bench/process-start).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const DIST = path.resolve(__dirname, '../..');

export function inFreshProcess(modules: string[], tail: string): string {
  // Packages by name, the lab's modules by their path in dist.
  const list = modules.map((m) => (m.startsWith('@') ? m : path.join(DIST, m)));
  const script = `
    // A worker's main runs on require: its imports are loaded before it throws for want of a real host.json.
    process.argv[2] = '/nonexistent/host.json';
    for (const m of ${JSON.stringify(list)}) try { require(m); } catch {}
    ${tail}`;
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: DIST, timeout: 60_000 });
}
