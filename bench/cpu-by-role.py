#!/usr/bin/env python3
"""CPU seconds by role while something runs (the test suite, a demo): samples /proc once a second until SIGTERM,
then prints the roles, largest first. Node processes are named by their script (jest worker, host agent, control
worker, CLI), PostgreSQL and pgbench by the storage class in their host's memory cgroup. A process is counted from
its start when it started after the sampler; one that lives less than the sampling period may be missed, so the
totals count low. Used for docs/benchmarks.md, "Where the suite's CPU goes".
    python3 bench/cpu-by-role.py > cpu.txt & ...; kill %1
"""
import collections, os, re, signal, sys, time

hz = os.sysconf('SC_CLK_TCK')
# Seconds since boot when the sampler started: a process that started later is counted from its own start.
started_boot = float(open('/proc/uptime').read().split()[0])
last = {}  # (pid, start time) -> (CPU seconds at the last sample, role)
total = collections.Counter()
def role(pid, comm):
    if comm.startswith('node') or comm == 'MainThread' or comm.startswith('jest'):
        try:
            cmd = open(f'/proc/{pid}/cmdline','rb').read().split(b'\0')
            s = b' '.join(cmd).decode(errors='replace')
            for k in ['host-agent','host-supervisor','control-worker','jest-worker','processChild','eslint','jest.js','cli.js']:
                if k in s: return 'node:'+k
            return 'node:other'
        except Exception: return comm
    if comm.startswith('postgres') or comm.startswith('postmaster') or comm == 'pgbench':
        base = 'postgres' if comm != 'pgbench' else 'pgbench'
        try:
            cg = open(f'/proc/{pid}/cgroup').read()
            m = re.search(r'memory:.*?([a-z0-9]+-([a-z0-9-]+?)-\d+)\s*$', cg, re.M)
            if m: return base + ':' + m.group(2)
        except Exception: pass
        return base + ':?'
    return comm
def sample():
    seen = set()
    for d in os.listdir('/proc'):
        if not d.isdigit(): continue
        try:
            t = open(f'/proc/{d}/stat').read()
        except Exception: continue
        comm = t[t.index('(')+1:t.rindex(')')]
        f = t[t.rindex(')')+2:].split()
        cpu = (int(f[11])+int(f[12]))/hz
        key = (d, f[19])
        seen.add(key)
        prev = last.get(key)
        if prev is None:
            r = role(d, comm)
            last[key] = (cpu, r)
            total[r] += cpu if int(f[19])/hz > started_boot else 0
        else:
            total[prev[1]] += cpu - prev[0]
            last[key] = (cpu, prev[1])
    for k in list(last):
        if k not in seen: del last[k]
def done(*a):
    s = sum(total.values())
    for k,v in total.most_common(25): print(f'{v:8.1f} {k}')
    print(f'{s:8.1f} total; wall {float(open("/proc/uptime").read().split()[0]) - started_boot:.0f}')
    sys.stdout.flush(); os._exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    sample(); time.sleep(1)
