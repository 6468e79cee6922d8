#!/usr/bin/env bash
# `npm test`: the bootstrap, then eslint and jest side by side; all must pass.
#
# The bootstrap's two slowest steps on a fresh machine, WAL-G's build from source and moto's install (4-5 minutes
# between them, docs/benchmarks.md), are needed by neither the unit nor the workflow layer (mocked activities, the
# dev server). So the rest of the bootstrap runs first, then WAL-G and moto are built beside those two layers, and
# the integration, end-to-end and fault layers start once they are in. On a machine that has them, the second part
# is a check of a second. With arguments for jest (`npm test -- --json --outputFile=F`) the whole bootstrap runs
# first and jest runs once, so its report covers every file.
#
# eslint's typed rules take a minute of one core on a fresh clone; the suite's files mostly wait (timers, pgbench
# windows, hosts starting), so eslint beside them costs the suite little, and before them it cost CI a minute of
# wall time. eslint's report prints after jest's, whole.
set -uo pipefail
cd "$(dirname "$0")/.."
late_steps=walg,moto
lint_log=$(mktemp)
late_log=$(mktemp)
trap 'rm -f "$lint_log" "$late_log"' EXIT

jest() { node node_modules/jest/bin/jest.js "$@"; }
if [ $# -gt 0 ]; then
  bash infra/bootstrap.sh test || exit 1
else
  bash infra/bootstrap.sh test --skip "$late_steps" || exit 1
  bash infra/bootstrap.sh test --only "$late_steps" >"$late_log" 2>&1 &
  late_pid=$!
fi
node node_modules/eslint/bin/eslint.js . >"$lint_log" 2>&1 &
lint_pid=$!

if [ $# -gt 0 ]; then
  jest "$@"
  tests=$?
else
  early='/dist/test/(unit|workflow)/'
  jest "$early"
  early_tests=$?
  wait "$late_pid"
  late=$?
  cat "$late_log" >&2
  if [ "$late" -ne 0 ]; then
    echo "[test] the bootstrap's $late_steps failed (above): the integration, end-to-end and fault layers need them" >&2
    tests=1
  else
    jest --testPathIgnorePatterns "$early" /node_modules/
    tests=$?
  fi
  [ "$early_tests" -eq 0 ] || tests=1
fi
wait "$lint_pid"
lint=$?
if [ "$lint" -ne 0 ]; then
  cat "$lint_log"
  echo "[test] eslint failed (exit $lint)" >&2
else
  echo "[test] eslint: no problems"
fi
[ "$tests" -eq 0 ] && [ "$lint" -eq 0 ]
