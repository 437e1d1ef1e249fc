#!/usr/bin/env bash
# cluster_test: tutti across namespace "hosts" on this machine (tests/cluster/cluster.sh).
#
# Usage: cluster_test.sh CLUSTER_CHECK   (the cluster_check program)
#
# Three hosts h0 h1 h2 (10.77.0.1-3), one setup for every case:
#   coll       for each placement in CLUSTER_SPECS, one job that walks every algorithm in
#              CLUSTER_ALGOS (a fresh communicator per algorithm) through every collective,
#              checked on every rank (cluster_check coll). 3x1 has one rank per host, so
#              cyclic is block there and runs once.
#   loss       cyclic 2+1+3, auto: the coll job again with 1% of the packets into every host
#              dropped at random (nft numgen).
#   kill       block 3x2, rank 3 (on h1, next to rank 2) SIGKILLs itself: every other rank,
#              on every host, fails naming it with its pid and host.
#   partition  block 3x2, TUTTI_TIMEOUT=5: h2 drops everything on its link (nft; with
#              CLUSTER_PARTITION=linkdown its eth0 goes down instead) while the ranks loop;
#              every rank fails with a timeout or a remote failure naming a rank (a timeout
#              also names the call) within its deadline.
#   split      block 3x2: tutti_comm_split by rank parity (both halves span hosts) and
#              tutti_comm_dup, each checked with an all-reduce.
# Overrides: CLUSTER_ALGOS, CLUSTER_SPECS, CLUSTER_CASES (words from "coll loss kill
# partition split"), CLUSTER_SMALL / CLUSTER_MEDIUM (counts), CLUSTER_ENV (more variables for every rank,
# e.g. TUTTI_SOCKET_IFNAME=eth0).
# Exits 77 (ctest SKIP) with the reason when the machine cannot make the namespaces, 1 if a
# check failed. The namespaces are deleted on any exit; the last check is that none is left.
set -u

PROG=${1:?usage: cluster_test.sh CLUSTER_CHECK}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cluster/cluster.sh
. "$HERE/cluster.sh"

ALGOS=${CLUSTER_ALGOS:-auto,ring,hier,recursive_doubling,rabenseifner,tree}
SPECS=${CLUSTER_SPECS:-block:3x2 cyclic:3x2 block:2x3 cyclic:2x3 block:3x1 block:2+1+3 cyclic:2+1+3}
CASES=${CLUSTER_CASES:-coll loss kill partition split}
SMALL=${CLUSTER_SMALL:-1031}
MEDIUM=${CLUSTER_MEDIUM:-131075}
BASE_ENV="TUTTI_DEBUG=none ${CLUSTER_ENV:-}"
failures=0
T0=$(date +%s)

[ -x "$PROG" ] || { echo "cluster_test: FAIL: $PROG is not an executable"; exit 1; }
# A deadline of our own below ctest's TIMEOUT (600 s): ctest kills with SIGKILL, which no trap
# sees; TERM goes through cluster_down.
LIMIT=${CLUSTER_TEST_LIMIT:-540}
# The sleep must not hold our stdout: ctest waits for every holder of its pipe to close it.
(
  trap 'kill "$sp" 2>/dev/null; exit 0' TERM
  sleep "$LIMIT" >/dev/null 2>&1 &
  sp=$!
  wait "$sp" && echo "cluster_test: FAIL: still running after $LIMIT s" && kill -TERM $$
) &
WATCHDOG=$!
# shellcheck disable=SC2317 # called through CLUSTER_ON_EXIT
stop_watchdog() { kill "$WATCHDOG" 2>/dev/null; }
CLUSTER_ON_EXIT=stop_watchdog
cluster_up 3
case $? in
0) ;;
77) echo "cluster_test: SKIP: $CLUSTER_WHY"; exit 77 ;;
*) echo "cluster_test: FAIL: cluster_up"; exit 1 ;;
esac
echo "cluster_test: hosts h0 h1 h2 in namespaces ${CLUSTER_TAG}h0..h2 (bridge ${CLUSTER_TAG}br)"

fail() {
  echo "cluster_test: FAIL: $*"
  failures=$((failures + 1))
}

# show JOB [LINES]: each rank's last lines, prefixed.
show() {
  local r
  for ((r = 0; r < CLUSTER_NRANKS; r++)); do
    tail -n "${2:-3}" "$CLUSTER_TMP/$1.$r" | sed "s/^/  [$1 $r rc ${CLUSTER_RC[r]:-?}] /"
  done
}

# finish JOB LIMIT: waits; every rank must exit 0 with a PASS line.
finish() {
  local job=$1 t0 r bad=0
  t0=$(date +%s)
  cluster_wait "$2"
  for ((r = 0; r < CLUSTER_NRANKS; r++)); do
    if [ "${CLUSTER_RC[r]}" != 0 ] || ! grep -q "rank $r: PASS" "$CLUSTER_TMP/$job.$r"; then
      bad=1
    fi
  done
  if [ "$bad" = 0 ]; then
    echo "cluster_test: $job: pass ($(($(date +%s) - t0)) s in the wait)"
    return 0
  fi
  fail "$job: a rank failed"
  show "$job" 6
  return 1
}

run_coll() {
  local spec
  for spec in $SPECS; do
    local job="coll_${spec/:/_}"
    job=${job//+/-}
    CLUSTER_ENV="$BASE_ENV TUTTI_TIMEOUT=60" cluster_run "$job" "$spec" "$PROG" coll \
      --algos "$ALGOS" --small "$SMALL" --medium "$MEDIUM"
    if finish "$job" 400; then
      sed -n 's/^cluster_check: algo/  algo/p' "$CLUSTER_TMP/$job.0" | tr '\n' ';' |
        sed 's/;  /; /g; s/;$/\n/'
    fi
  done
}

# 1% of the packets into every host dropped: TCP retransmits, the results stay exact.
run_loss() {
  local h spec=cyclic:2+1+3
  for ((h = 0; h < 3; h++)); do cluster_loss "$h" 1 || fail "loss: nft refused the rule"; done
  CLUSTER_ENV="$BASE_ENV TUTTI_TIMEOUT=60" cluster_run loss "$spec" "$PROG" coll --algos auto \
    --small "$SMALL" --medium "$MEDIUM"
  finish loss 300
  for ((h = 0; h < 3; h++)); do cluster_loss "$h" 0; done
}

run_kill() {
  CLUSTER_ENV="$BASE_ENV TUTTI_TIMEOUT=30" cluster_run kill block:3x2 "$PROG" kill --victim 3
  cluster_wait 120
  local r bad=0
  for ((r = 0; r < CLUSTER_NRANKS; r++)); do
    [ "$r" = 3 ] && continue
    if [ "${CLUSTER_RC[r]}" != 0 ] || ! grep -q "rank $r: PASS" "$CLUSTER_TMP/kill.$r"; then
      bad=1
      echo "  rank $r exited with ${CLUSTER_RC[r]}; its last lines:"
      tail -n 5 "$CLUSTER_TMP/kill.$r" | sed 's/^/    /'
    fi
  done
  [ "${CLUSTER_RC[3]}" = 137 ] || { bad=1; echo "  the victim exited with ${CLUSTER_RC[3]}, not 137"; }
  if [ "$bad" = 0 ]; then echo "cluster_test: kill: pass"; else fail "kill"; fi
  grep -h "returned\|FAIL" "$CLUSTER_TMP"/kill.* | sed 's/^/  /'
}

run_partition() {
  CLUSTER_ENV="$BASE_ENV TUTTI_TIMEOUT=5" cluster_run partition block:3x2 "$PROG" partition
  local i r ready
  for ((i = 0; i < 300; i++)); do # up to 30 s for every rank to be in the loop
    ready=0
    for ((r = 0; r < CLUSTER_NRANKS; r++)); do
      grep -q looping "$CLUSTER_TMP/partition.$r" 2>/dev/null && ready=$((ready + 1))
    done
    [ "$ready" = "$CLUSTER_NRANKS" ] && break
    cluster_running || break
    sleep 0.1
  done
  if [ "$ready" = "$CLUSTER_NRANKS" ]; then
    sleep 0.5
    if [ "${CLUSTER_PARTITION:-nft}" = linkdown ]; then
      cluster_link_down 2 || fail "partition: ip link set down refused"
    else
      cluster_partition 2 on || fail "partition: nft refused the drop rule"
    fi
    cluster_wait 60
  else
    cluster_wait 5
    fail "partition: the ranks never all reached the loop"
  fi
  cluster_partition 2 off
  local bad=0
  for ((r = 0; r < CLUSTER_NRANKS; r++)); do
    if [ "${CLUSTER_RC[r]}" != 0 ] || ! grep -q "rank $r: PASS" "$CLUSTER_TMP/partition.$r"; then
      bad=1
      echo "  rank $r exited with ${CLUSTER_RC[r]}; its last lines:"
      tail -n 5 "$CLUSTER_TMP/partition.$r" | sed 's/^/    /'
    fi
  done
  if [ "$bad" = 0 ]; then echo "cluster_test: partition: pass"; else fail "partition"; fi
  grep -h "returned\|FAIL" "$CLUSTER_TMP"/partition.* | sed 's/^/  /'
}

run_split() {
  CLUSTER_ENV="$BASE_ENV TUTTI_TIMEOUT=5" cluster_run split block:3x2 "$PROG" split
  cluster_wait 90
  local r bad=0
  for ((r = 0; r < CLUSTER_NRANKS; r++)); do
    if [ "${CLUSTER_RC[r]}" != 0 ] || ! grep -q "rank $r: PASS" "$CLUSTER_TMP/split.$r"; then
      bad=1
    fi
  done
  if [ "$bad" = 0 ]; then echo "cluster_test: split: pass"; else fail "split"; fi
  # Each distinct outcome once (numbers made N), with how many ranks saw it.
  grep -h "returned" "$CLUSTER_TMP"/split.* | grep -v FAIL | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' |
    sort | uniq -c | sed 's/^ */  /'
}

for c in $CASES; do
  case $c in
  coll) run_coll ;;
  loss) run_loss ;;
  kill) run_kill ;;
  partition) run_partition ;;
  split) run_split ;;
  *) fail "unknown case $c" ;;
  esac
done

tag=$CLUSTER_TAG
cluster_down
if ip netns list | grep -q "^$tag"; then fail "namespaces left behind: $(ip netns list | grep "^$tag")"; fi
echo "cluster_test: $(($(date +%s) - T0)) s in all"
if [ "$failures" = 0 ]; then
  echo "cluster_test: all cases passed"
  exit 0
fi
echo "cluster_test: $failures case(s) failed"
exit 1
