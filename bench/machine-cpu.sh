#!/bin/bash
# Runs a command and prints its wall seconds and the whole machine's busy CPU seconds over it (/proc/stat: user, nice,
# system, irq, softirq, steal), so a change to a test file can be weighed by the CPU it takes from the suite's other
# files, not by its own wall time. The command's output goes to $MACHINE_CPU_LOG (default /tmp/machine-cpu.log).
# Usage: bench/machine-cpu.sh node node_modules/jest/bin/jest.js dist/test/faults/dead-hosts.test.js
set -u
log=${MACHINE_CPU_LOG:-/tmp/machine-cpu.log}
busy() { read -r _ u n s _ _ q sq st _ < /proc/stat; echo $((u + n + s + q + sq + st)); }
b0=$(busy); t0=$(date +%s%N)
"$@" > "$log" 2>&1; rc=$?
b1=$(busy); t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
echo "exit $rc, wall $(( (t1 - t0) / 1000000 )) ms, machine busy $(awk -v j=$((b1 - b0)) -v hz="$hz" 'BEGIN { printf "%.1f", j / hz }') CPU-s (output: $log)"
exit $rc
