#!/usr/bin/env bash
# garbage_check: strangers at every listening port of a forming tcp job; the job must end
# bit-exact and every refusal must be logged (TUTTI_DEBUG=warn).
#
# Usage: garbage_check.sh NET_CHECK GARBAGE_PROBE_PY
#
# Ranks 0-2 of a 4-rank tcp job start on loopback; rank 3 is held back, so the rendezvous
# listener (rank 0) and the data listeners (ranks 0-2) stay open. garbage_probe.py finds those
# ports through /proc/<pid>/fd and /proc/<pid>/net/tcp and opens three connections to each:
# random bytes, a stranger's handshake (wrong secret) and a replayed handshake (valid for
# another connection's challenge). Then rank 3 starts: the data listeners meet the queued
# strangers when they accept their peers. The ranks run net_check (10 verified 8 MiB
# all-reduces) and must pass; each listener must have logged a WARN for each refusal.
# Listeners close once the job has formed, so there is nothing left to attack during the
# loop: the probe checks that too, after the job formed.
set -u
PROG=${1:?usage: garbage_check.sh NET_CHECK GARBAGE_PROBE_PY}
PROBE=${2:?usage}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "garbage_check: SKIP: no $PY"; exit 77; }
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
failures=0
fail() {
  echo "garbage_check: FAIL: $*"
  failures=$((failures + 1))
}

PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
start_rank() {
  TUTTI_RANK=$1 TUTTI_WORLD_SIZE=4 TUTTI_ADDR=127.0.0.1:$PORT TUTTI_SECRET=$SECRET \
    TUTTI_TRANSPORT=tcp TUTTI_TIMEOUT=60 TUTTI_DEBUG=warn \
    timeout -k 2 120 "$PROG" --mib 8 --iters 10 >"$TMP/rank.$1" 2>&1 &
  PIDS+=($!)
}
for r in 0 1 2; do start_rank $r; done
# The ranks are the children of `timeout`; the probe needs the programs' own pids.
sleep 0.5
RANK_PIDS=()
for p in "${PIDS[@]}"; do
  c=$(awk '{print $1}' "/proc/$p/task/$p/children" 2>/dev/null)
  RANK_PIDS+=("${c:-$p}")
done
pidlist=$(IFS=,; echo "${RANK_PIDS[*]}")
timeout -k 2 90 $PY "$PROBE" "$SECRET" "$pidlist" 4 >"$TMP/probe" 2>&1 &
probe=$!
for _ in $(seq 1 600); do
  grep -q "attacks queued\|FAIL" "$TMP/probe" && break
  sleep 0.1
done
sleep 1 # let the rendezvous refuse its strangers before the job forms
start_rank 3
wait "$probe" || fail "the probe failed"
cat "$TMP/probe"
# The job has formed (every listener met its strangers while accepting its peers): the
# rendezvous is gone; each rank keeps only its data listener, for tutti_comm_shrink (which
# authenticates whatever it accepts there), and nothing is accepted on it before a shrink.
left=$($PY "$PROBE" --count "$pidlist")
echo "garbage_check: ports still listening while the loop runs: $left"
[ "$left" -le 3 ] || fail "$left ports still listen after the job formed (want at most the 3 probed ranks' data listeners)"
for r in 0 1 2 3; do
  wait "${PIDS[$r]}"
  rc=$?
  grep -v " TRACE \| INFO " "$TMP/rank.$r" | sed "s/^/  [rank $r] /" | tail -12
  [ "$rc" -eq 0 ] && grep -q PASS "$TMP/rank.$r" || fail "rank $r exited with status $rc"
done
data=$(cat "$TMP"/rank.* | grep -c "WARN net: rejected a data connection")
rdv=$(cat "$TMP"/rank.* | grep -c "rendezvous rejected a connection")
echo "garbage_check: refusals logged: $data at data listeners, $rdv at the rendezvous"
[ "$data" -ge 9 ] || fail "want 3 refusals logged by each of the 3 data listeners, got $data"
[ "$rdv" -ge 3 ] || fail "want 3 refusals logged by the rendezvous, got $rdv"
if [ "$failures" -eq 0 ]; then
  echo "garbage_check: PASS"
  exit 0
fi
exit 1
