#!/usr/bin/env bash
# `npm test` after its bootstrap: eslint and jest side by side, and both must pass. eslint's typed rules take a minute
# of one core on a fresh clone; the suite's files mostly wait (timers, pgbench windows, hosts starting), so eslint
# beside them costs the suite little, and before them it cost CI a minute of wall time. eslint's report prints after
# jest's, whole. Arguments go to jest (`npm test -- --json --outputFile=F`).
set -uo pipefail
cd "$(dirname "$0")/.."
lint_log=$(mktemp)
trap 'rm -f "$lint_log"' EXIT
node node_modules/eslint/bin/eslint.js . >"$lint_log" 2>&1 &
lint_pid=$!
node node_modules/jest/bin/jest.js "$@"
tests=$?
wait "$lint_pid"
lint=$?
if [ "$lint" -ne 0 ]; then
  cat "$lint_log"
  echo "[test] eslint failed (exit $lint)" >&2
else
  echo "[test] eslint: no problems"
fi
[ "$tests" -eq 0 ] && [ "$lint" -eq 0 ]
