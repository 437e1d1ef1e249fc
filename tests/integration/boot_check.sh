#!/usr/bin/env bash
# boot_check: the rendezvous of a launched 4-rank job (tutti_comm_init_env) under trouble.
#
# Usage: boot_check.sh BOOT_CHECK CASE
#   strangers  rank 0 starts; 6 idle connections and 1 that sends garbage a byte at a time are
#              held open to its rendezvous port; then ranks 1-3 start. Every rank must pass,
#              and init must not wait for the strangers (it used to take 5 s per stranger:
#              > 30 s here, and with TUTTI_TIMEOUT=20 every rank failed). Bound: 15 s, for
#              hangs (the job takes under 1 s on a quiet machine).
#   missing    ranks 0-2 of 4 with TUTTI_INIT_TIMEOUT=3: every rank fails with "timed out"
#              within 20 s, its error names rank 3 as missing, and rank 0 logged who was
#              missing while it waited (the progress line).
#   fanout     jobs of 4 and 16 ranks (TUTTI_DEBUG=info): the bytes the rendezvous sent in all
#              grow linearly in the ranks (per rank at 16 within 3 table entries of per rank at
#              4; sending every rank the whole table adds 12 entries per rank), and every rank
#              logs the same table digest as the rendezvous, for all the ranks.
#   tree_stall 8 ranks; rank 1 (parent of 3 and 4, grandparent of 7 in the distribution tree)
#              is stopped (SIGSTOP) once it has joined, then rank 7 comes, with
#              TUTTI_INIT_TIMEOUT=10: ranks 3, 4 and 7 (below it) and 0 (its parent) fail within
#              40 s, each error naming rank 1 by its pid (they give up at about 10-14 s).
#   tree_death the same, but rank 1 is killed (SIGKILL) once the rendezvous has answered, with
#              TUTTI_INIT_TIMEOUT=60: the same ranks fail naming rank 1 within 15 s of the kill
#              (the connection breaks; no deadline is waited for).
#   sigusr1    ranks 0-2 of 4 start; kill -USR1 ranks 0 and 1 during the rendezvous: they stay
#              alive (it used to kill them: exit 138) and log a report that they are in the
#              rendezvous; rank 0's server logs who is missing. Then rank 3 comes and all pass.
set -u
PROG=${1:?usage: boot_check.sh BOOT_CHECK CASE}
CASE=${2:?usage: boot_check.sh BOOT_CHECK CASE}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "boot_check: SKIP: no $PY"; exit 77; }
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP_TMP:-}" ] && cp -r "$TMP" "$KEEP_TMP"; rm -rf "$TMP"
}
trap cleanup EXIT
failures=0
fail() {
  echo "boot_check $CASE: FAIL: $*"
  failures=$((failures + 1))
}
now() { date +%s.%N; }
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
# Ranks run the program directly (no `timeout` wrapper), so signals reach it; the EXIT trap
# kills whatever is left, and every wait below is bounded.
start_rank() {
  TUTTI_RANK=$1 TUTTI_WORLD_SIZE=${NRANKS:-4} TUTTI_ADDR=127.0.0.1:$PORT TUTTI_SECRET=$SECRET \
    TUTTI_DEBUG=${DEBUG:-warn} "$PROG" >"$TMP/rank.$1" 2>&1 &
  PIDS[$1]=$!
}
# Waits at most $2 seconds for pid $1 to exit; its status, or 255 if it had to be killed.
wait_bounded() {
  local end=$(( $(date +%s) + $2 ))
  while kill -0 "$1" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done
  kill -9 "$1" 2>/dev/null && { wait "$1" 2>/dev/null; return 255; }
  wait "$1"
}
show() {
  for r in "$@"; do sed "s/^/  [rank $r] /" "$TMP/rank.$r" | tail -8; done
}

case "$CASE" in
strangers)
  export TUTTI_TIMEOUT=20
  start_rank 0
  # Holds the strangers open until told to stop (or 60 s); prints "held" once all are in.
  $PY - "$PORT" >"$TMP/holder" 2>&1 <<'PYEOF' &
import socket, sys, time
port = int(sys.argv[1])
end = time.time() + 30
socks = []
while len(socks) < 7 and time.time() < end:
    try:
        socks.append(socket.create_connection(("127.0.0.1", port), timeout=1))
    except OSError:
        time.sleep(0.05)
print("held", len(socks), flush=True)
slow = socks[-1]
stop = time.time() + 60
while time.time() < stop:
    try:
        slow.send(b"\x5a")  # garbage, one byte at a time: a slow loris
    except OSError:
        pass
    time.sleep(0.3)
PYEOF
  holder=$!
  PIDS+=($holder)
  for _ in $(seq 1 300); do grep -q held "$TMP/holder" && break; sleep 0.1; done
  grep -q "held 7" "$TMP/holder" || fail "could not hold 7 connections: $(cat "$TMP/holder")"
  t0=$(now)
  for r in 1 2 3; do start_rank $r; done
  for r in 0 1 2 3; do
    wait_bounded "${PIDS[$r]}" 60
    rc=$?
    [ "$rc" -eq 0 ] && grep -q PASS "$TMP/rank.$r" || fail "rank $r exited with status $rc"
  done
  t1=$(now)
  secs=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")
  echo "boot_check strangers: the 4 ranks ended $secs s after ranks 1-3 started, 7 strangers connected"
  awk "BEGIN{exit !($secs < 15)}" || fail "the job took $secs s with strangers connected (want < 15 s)"
  show 0 1 2 3
  ;;
missing)
  export TUTTI_INIT_TIMEOUT=3 TUTTI_TIMEOUT=60
  t0=$(now)
  for r in 0 1 2; do start_rank $r; done
  for r in 0 1 2; do
    wait_bounded "${PIDS[$r]}" 40
    rc=$?
    [ "$rc" -eq 2 ] || fail "rank $r exited with status $rc (want 2, its init failing, not success, a crash or a hang)"
    grep -q "boot_check FAIL init: timed out" "$TMP/rank.$r" || fail "rank $r did not fail with a timeout"
    grep "tutti_comm_init_env" "$TMP/rank.$r" | grep -q "missing: rank 3" ||
      fail "rank $r's error does not name rank 3 as missing"
  done
  secs=$(awk "BEGIN{printf \"%.2f\", $(now) - $t0}")
  echo "boot_check missing: every rank failed after $secs s"
  awk "BEGIN{exit !($secs < 20)}" || fail "the ranks took $secs s to fail (want < 20 s)"
  grep -q "rendezvous at .*: 3 of 4 ranks joined after .* waiting for rank 3" "$TMP/rank.0" ||
    fail "rank 0 did not log who is missing while it waited"
  show 0 1 2
  ;;
fanout)
  export TUTTI_TIMEOUT=60 DEBUG=info TUTTI_DEBUG_SUBSYS=boot
  ENTRY=116 # bytes of one rank's table entry (tutti_rdv_entry_t)
  for NRANKS in 4 16; do
    PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    for r in $(seq 0 $((NRANKS - 1))); do start_rank "$r"; done
    for r in $(seq 0 $((NRANKS - 1))); do
      wait_bounded "${PIDS[$r]}" 90
      rc=$?
      [ "$rc" -eq 0 ] && grep -q PASS "$TMP/rank.$r" || { fail "n=$NRANKS: rank $r exited with status $rc"; show "$r"; }
    done
    line=$(grep -h "rendezvous at .*: done after" "$TMP/rank.0")
    bytes=$(sed -n 's/.* \([0-9][0-9]*\) bytes sent in all, for \([0-9]*\) ranks.*/\1/p' <<<"$line")
    digest=$(sed -n 's/.*(table digest \([0-9a-f]*\)).*/\1/p' <<<"$line")
    [ -n "$bytes" ] && [ -n "$digest" ] || fail "n=$NRANKS: rank 0 did not log what its rendezvous sent: '$line'"
    eval "BYTES_$NRANKS=${bytes:-0}"
    echo "boot_check fanout: n=$NRANKS: the rendezvous sent ${bytes:-?} bytes ($(( ${bytes:-0} / NRANKS )) per rank), table digest ${digest:-?}"
    # Every rank holds the table the rendezvous built: same digest, all NRANKS entries.
    for r in $(seq 0 $((NRANKS - 1))); do
      grep -q "rank $r has the address table of $NRANKS ranks (digest ${digest:-none})" "$TMP/rank.$r" ||
        fail "n=$NRANKS: rank $r did not log the rendezvous's table (digest ${digest:-?}): $(grep 'address table' "$TMP/rank.$r")"
    done
    for r in $(seq 0 $((NRANKS - 1))); do rm -f "$TMP/rank.$r"; done
  done
  per4=$((BYTES_4 / 4)) per16=$((BYTES_16 / 16))
  [ $((per16 - per4)) -le $((3 * ENTRY)) ] ||
    fail "the rendezvous sent $per16 bytes per rank at n=16 and $per4 at n=4: it grows with n per rank (n^2 in all), by $(( (per16 - per4) / ENTRY )) table entries"
  ;;
tree_stall | tree_death)
  NRANKS=8
  export DEBUG=info TUTTI_DEBUG_SUBSYS=boot
  if [ "$CASE" = tree_stall ]; then export TUTTI_INIT_TIMEOUT=10 TUTTI_TIMEOUT=30
  else export TUTTI_INIT_TIMEOUT=60 TUTTI_TIMEOUT=60; fi
  for r in 0 1 2 3 4 5 6; do start_rank $r; done
  # Until rank 0's rendezvous says 7 have joined (asked by SIGUSR1; its handler is installed
  # before the rendezvous starts, which is before any rank can join).
  joined=0
  for _ in $(seq 1 100); do
    sleep 0.3
    kill -USR1 "${PIDS[0]}" 2>/dev/null
    sleep 0.1
    grep -q "7 of 8 ranks joined" "$TMP/rank.0" && { joined=1; break; }
  done
  [ "$joined" -eq 1 ] || fail "ranks 0-6 did not all join within 40 s"
  pid1=${PIDS[1]}
  kill -STOP "$pid1"
  start_rank 7
  t0=$(now)
  if [ "$CASE" = tree_death ]; then
    # Once every rank has joined, so the rendezvous has answered (a rank that leaves before
    # that only frees its place there).
    for _ in $(seq 1 300); do grep -q "all 8 ranks joined" "$TMP/rank.0" && break; sleep 0.1; done
    grep -q "all 8 ranks joined" "$TMP/rank.0" || fail "rank 7 did not join within 30 s"
    kill -9 "$pid1"
    t0=$(now)
  fi
  for r in 0 3 4 7; do
    wait_bounded "${PIDS[$r]}" 40
    rc=$?
    [ "$rc" -eq 2 ] || fail "rank $r exited with status $rc (want 2, its init failing)"
    grep "tutti_comm_init_env" "$TMP/rank.$r" | grep -q "rank 1 (pid $pid1 " ||
      fail "rank $r's error does not name rank 1 (pid $pid1)"
  done
  secs=$(awk "BEGIN{printf \"%.2f\", $(now) - $t0}")
  limit=40
  [ "$CASE" = tree_death ] && limit=15
  echo "boot_check $CASE: ranks 0, 3, 4 and 7 failed naming rank 1 after $secs s"
  awk "BEGIN{exit !($secs < $limit)}" || fail "they took $secs s to fail (want < $limit s)"
  show 0 3 7
  ;;
sigusr1)
  export TUTTI_INIT_TIMEOUT=60 TUTTI_TIMEOUT=60
  for r in 0 1 2; do start_rank $r; done
  # Until all three are connected to the rendezvous (their handler is installed before they
  # connect; a signal before the library is reached kills a process, as it should).
  hexport=$(printf '%04X' "$PORT")
  for _ in $(seq 1 300); do
    n=$(awk -v p=":$hexport" '$4 == "01" && substr($3, length($3) - 4) == p' /proc/net/tcp | wc -l)
    [ "$n" -ge 3 ] && break
    sleep 0.1
  done
  [ "$n" -ge 3 ] || fail "only $n ranks connected to the rendezvous within 30 s"
  sleep 0.3 # their hellos, so that rank 0's report usually shows 3 of 4
  kill -USR1 "${PIDS[0]}" "${PIDS[1]}"
  sleep 1
  for r in 0 1; do
    kill -0 "${PIDS[$r]}" 2>/dev/null || fail "rank $r died of SIGUSR1 during the rendezvous"
  done
  start_rank 3
  for r in 0 1 2 3; do
    wait_bounded "${PIDS[$r]}" 60
    rc=$?
    [ "$rc" -eq 0 ] && grep -q PASS "$TMP/rank.$r" || fail "rank $r exited with status $rc"
  done
  for r in 0 1; do
    grep -q "wait report (SIGUSR1): in the rendezvous" "$TMP/rank.$r" ||
      fail "rank $r did not report that it waits in the rendezvous"
  done
  grep -Eq "rendezvous at .*\(SIGUSR1\): [0-3] of 4 ranks joined .* waiting for ranks? [0-9]" \
    "$TMP/rank.0" ||
    fail "rank 0's rendezvous did not report the missing rank on SIGUSR1"
  show 0 1 2 3
  ;;
*)
  echo "boot_check: unknown case $CASE"
  exit 2
  ;;
esac
if [ "$failures" -eq 0 ]; then
  echo "boot_check $CASE: PASS"
  exit 0
fi
exit 1
