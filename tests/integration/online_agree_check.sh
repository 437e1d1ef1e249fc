#!/usr/bin/env bash
# online_agree_check: online selection's agreement after a size's last trial is sent through
# the queues tagged as that call; a rank still waiting for the peer's one-shot post of the
# call must not take it for the peer running the call through its queues. Both ranks share
# one CPU and never spin (TUTTI_SPIN_US=0), so a rank is often switched out between looking
# at the peer's mailbox and at its queue: 121 sizes, each tried and agreed on (4-64 KiB, the
# candidates include one-shot), in each of 20 runs. Before the fix 9 of 10 such runs failed
# with "the ranks disagree on call #N". TUTTI_TUNE_REMEMBER=0: every run tries its sizes afresh.
# Usage: online_agree_check.sh TUTTI_RUN TUTTI_BENCH
set -u
RUN=$1
BENCH=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cpu=$(taskset -pc $$ | sed 's/.*: //;s/[-,].*//') # the first CPU this test may use
for i in $(seq 1 20); do
  if ! TUTTI_TUNE_REMEMBER=0 TUTTI_SPIN_US=0 TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=60 taskset -c "$cpu" \
      "$RUN" --timeout 120 -n 2 "$BENCH" allreduce -b 4096 -e 64k -f 1 -i 512 -w 14 -n 2 -c 1 >"$out" 2>&1 ||
     ! grep -q "Out of bounds values : 0 OK" "$out"; then
    echo "online_agree_check: FAILED in run $i:"
    tail -n 8 "$out"
    exit 1
  fi
done
echo "online_agree_check: 20 runs of 121 agreed sizes on one CPU, results checked"
