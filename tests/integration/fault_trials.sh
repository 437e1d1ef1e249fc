#!/usr/bin/env bash
# Runs one fault-injection job several times; each trial draws its own random seed (printed by
# the job, so a failure can be repeated with the job's seed variable).
# Usage: fault_trials.sh TRIALS_VAR DEFAULT LIMIT_S -- COMMAND [ARGS...]
#   TRIALS_VAR  environment variable that overrides the number of trials (DEFAULT)
#   LIMIT_S     wall-clock limit of one trial: a hung trial fails, it never hangs ctest
# Exits 0 when every trial passed, else the first failing trial's status.
set -u
var=${1:?usage}; default=${2:?usage}; limit=${3:?usage}
shift 3
[ "${1:-}" = "--" ] && shift
trials=${!var:-$default}
for ((t = 1; t <= trials; t++)); do
  echo "=== trial $t of $trials: $*"
  start=$(date +%s%N)
  timeout -k 5 "$limit" "$@"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && echo "=== trial $t hung: stopped after ${limit} s"
    echo "=== trial $t of $trials FAILED (exit status $rc, ${ms} ms)"
    exit "$rc"
  fi
  echo "=== trial $t of $trials passed (${ms} ms)"
done
echo "=== all $trials trials passed"
