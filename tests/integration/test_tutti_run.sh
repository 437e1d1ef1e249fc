#!/usr/bin/env bash
# Tests of the tutti-run launcher with plain shell programs (no library needed).
# Usage: test_tutti_run.sh BIN_DIR   (the folder holding tutti-run)
# Exits 0 when every check passes; otherwise prints each failed check and exits 1.
# The rank programs below are expanded by each rank's shell, not this one.
# shellcheck disable=SC2016
set -u

BIN_DIR=${1:?usage: $0 BIN_DIR}
RUN="$BIN_DIR/tutti-run"
[ -x "$RUN" ] || { echo "FAIL: $RUN is not an executable"; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Runs tutti-run with a hard outer limit, so a launcher that hangs fails the test instead of
# hanging it. Sets $rc; output in $TMP/out and $TMP/err.
run() {
  timeout -k 5 30 "$RUN" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

now_ms() { date +%s%3N; }

# --- every rank gets its own rank and the shared job variables ------------------------------
run -n 3 sh -c 'echo "env $TUTTI_RANK $TUTTI_WORLD_SIZE $TUTTI_ADDR $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT"'
[ "$rc" -eq 0 ] || fail "env: exit status $rc, want 0"
addr=$(sed -n 's/^\[0\] env 0 3 \(127\.0\.0\.1:[0-9]*\) .*/\1/p' "$TMP/out")
mport=$(sed -n 's/^\[0\] env .* \([0-9]*\)$/\1/p' "$TMP/out")
if [ -z "$addr" ] || [ -z "$mport" ]; then
  fail "env: rank 0 line missing or malformed: $(cat "$TMP/out")"
fi
[ "${addr#127.0.0.1:}" != "$mport" ] || fail "env: TUTTI_ADDR and MASTER_PORT share port $mport"
for r in 0 1 2; do
  want="[$r] env $r 3 $addr $r $r 3 3 127.0.0.1 $mport"
  grep -qxF "$want" "$TMP/out" || fail "env: no line '$want' in: $(cat "$TMP/out")"
done
[ "$(wc -l <"$TMP/out")" -eq 3 ] || fail "env: want 3 lines, got: $(cat "$TMP/out")"

# --- output: prefixed per rank, stdout and stderr kept apart, last partial line kept ---------
run -n 2 sh -c 'echo "out $TUTTI_RANK"; echo "err $TUTTI_RANK" >&2; printf "tail $TUTTI_RANK"'
[ "$rc" -eq 0 ] || fail "prefix: exit status $rc, want 0"
for r in 0 1; do
  grep -qxF "[$r] out $r" "$TMP/out" || fail "prefix: no '[$r] out $r' on stdout"
  grep -qxF "[$r] tail $r" "$TMP/out" || fail "prefix: unfinished last line of rank $r lost"
  grep -qxF "[$r] err $r" "$TMP/err" || fail "prefix: no '[$r] err $r' on stderr"
done
grep -q "err" "$TMP/out" && fail "prefix: stderr text on stdout"

# --- many lines from 4 ranks at once: none mixed mid-line, none lost, order kept per rank ---
run -n 4 sh -c 'i=0; while [ $i -lt 3000 ]; do echo "rank $TUTTI_RANK line $i 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"; i=$((i+1)); done'
[ "$rc" -eq 0 ] || fail "interleave: exit status $rc, want 0"
bad=$(grep -cvE '^\[([0-3])\] rank \1 line [0-9]+ 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz$' "$TMP/out")
[ "$bad" -eq 0 ] || fail "interleave: $bad mangled lines"
for r in 0 1 2 3; do
  grep "^\[$r\] " "$TMP/out" | awk '$5 != NR - 1 { exit 1 } END { exit NR != 3000 }' ||
    fail "interleave: rank $r's lines missing or out of order"
done

# --- a failing rank stops the others promptly and leaves nothing behind ---------------------
# The sleep is a child of sh (the echo after it keeps sh from exec'ing it), so this also checks
# that a rank's own children are stopped. Its odd length marks it for pgrep.
marker="60.$$"
start=$(now_ms)
run -n 3 sh -c "if [ \"\$TUTTI_RANK\" = 1 ]; then echo failing; exit 3; fi; sleep $marker; echo survived"
elapsed=$(($(now_ms) - start))
[ "$rc" -eq 3 ] || fail "failure: exit status $rc, want the failed rank's 3"
[ "$elapsed" -lt 5000 ] || fail "failure: took ${elapsed} ms to return, want < 5 s"
grep -q "rank 1 .*exited with status 3" "$TMP/err" || fail "failure: no report of rank 1: $(cat "$TMP/err")"
grep -qxF "[1] failing" "$TMP/out" || fail "failure: failing rank's output lost"
grep -q survived "$TMP/out" && fail "failure: another rank ran to completion"
sleep 0.2
if pgrep -f "sleep $marker" >/dev/null; then
  fail "failure: processes left behind: $(pgrep -af "sleep $marker")"
  pkill -KILL -f "sleep $marker"
fi

# --- a rank that ignores SIGTERM is killed after the grace period ---------------------------
marker="61.$$"
start=$(now_ms)
run -n 2 sh -c "trap '' TERM; if [ \"\$TUTTI_RANK\" = 0 ]; then sleep 0.3; exit 4; fi; sleep $marker; echo survived"
elapsed=$(($(now_ms) - start))
[ "$rc" -eq 4 ] || fail "sigterm-proof: exit status $rc, want 4"
[ "$elapsed" -lt 8000 ] || fail "sigterm-proof: took ${elapsed} ms, want < 8 s"
sleep 0.2
if pgrep -f "sleep $marker" >/dev/null; then
  fail "sigterm-proof: processes left behind: $(pgrep -af "sleep $marker")"
  pkill -KILL -f "sleep $marker"
fi

# --- a rank killed by a signal --------------------------------------------------------------
run -n 3 sh -c 'if [ "$TUTTI_RANK" = 2 ]; then kill -KILL $$; fi; sleep 60; echo survived'
[ "$rc" -eq 137 ] || fail "signal: exit status $rc, want 137 (128 + SIGKILL)"
grep -q "rank 2 .*killed by signal 9" "$TMP/err" || fail "signal: no report of rank 2: $(cat "$TMP/err")"

# --- success, and statuses passed through ---------------------------------------------------
run -n 4 true
[ "$rc" -eq 0 ] || fail "success: exit status $rc, want 0"
[ ! -s "$TMP/err" ] || fail "success: unexpected stderr: $(cat "$TMP/err")"
run -n 1 -- sh -c 'exit 0' ignored-arg
[ "$rc" -eq 0 ] || fail "success with --: exit status $rc, want 0"
run -n 2 sh -c 'exit $((TUTTI_RANK * 5))'
[ "$rc" -eq 5 ] || fail "status: exit status $rc, want 5"

# --- a program that cannot be run -----------------------------------------------------------
run -n 2 tutti-no-such-program-$$
[ "$rc" -eq 127 ] || fail "exec: exit status $rc, want 127"
grep -q "tutti-no-such-program" "$TMP/err" || fail "exec: no message naming the program"

# --- --timeout ------------------------------------------------------------------------------
start=$(now_ms)
run -n 2 --timeout 1 sleep 60
elapsed=$(($(now_ms) - start))
[ "$rc" -eq 124 ] || fail "timeout: exit status $rc, want 124"
[ "$elapsed" -lt 5000 ] || fail "timeout: took ${elapsed} ms, want about 1 s"
grep -qi "timed out" "$TMP/err" || fail "timeout: no message"

# --- --tolerate-signal: a rank killed from outside by that signal fails nothing ------------
run -n 3 --tolerate-signal 9 sh -c 'if [ "$TUTTI_RANK" = 1 ]; then kill -9 $$; fi; sleep 1; echo "alive $TUTTI_RANK"'
[ "$rc" -eq 0 ] || fail "tolerate: exit status $rc, want 0"
for r in 0 2; do
  grep -qxF "[$r] alive $r" "$TMP/out" || fail "tolerate: rank $r was stopped: $(cat "$TMP/out")"
done
grep -q "rank 1 .*tolerated" "$TMP/err" || fail "tolerate: the death of rank 1 was not reported"
run -n 2 --tolerate-signal 9 sh -c 'if [ "$TUTTI_RANK" = 1 ]; then kill -15 $$; fi; sleep 5'
[ "$rc" -eq 143 ] || fail "tolerate: a death by another signal gave status $rc, want 143"

# --- --bind-to: core gives each rank its own CPU (where there are enough); none changes nothing
mine=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
run -n 2 --bind-to none sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
[ "$rc" -eq 0 ] || fail "bind none: status $rc"
[ "$(grep -c -xF "[0] $mine" "$TMP/out")$(grep -c -xF "[1] $mine" "$TMP/out")" = 11 ] ||
  fail "bind none: the ranks' CPUs changed from $mine: $(cat "$TMP/out")"
if [ "$(nproc)" -ge 2 ]; then
  run -n 2 --bind-to core sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
  c0=$(sed -n 's/^\[0\] //p' "$TMP/out")
  c1=$(sed -n 's/^\[1\] //p' "$TMP/out")
  case "$c0$c1" in
    *[-,]*) fail "bind core: a rank may run on more than one CPU: '$c0' '$c1'" ;;
  esac
  [ -n "$c0" ] && [ -n "$c1" ] && [ "$c0" != "$c1" ] ||
    fail "bind core: ranks 0 and 1 not on two different CPUs: '$c0' '$c1'"
  run -n 1 --bind-to core sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
  grep -qxF "[0] $mine" "$TMP/out" || fail "bind core: a single rank was bound: $(cat "$TMP/out")"
fi

# --- bad usage ------------------------------------------------------------------------------
for args in "" "true" "-n 0 true" "-n -1 true" "-n x true" "-n 2" "-n 2 --" "--timeout 0 -n 2 true" "--bogus -n 2 true" "--tolerate-signal x -n 2 true" "--bind-to x -n 2 true"; do
  # shellcheck disable=SC2086 # word splitting of $args is the point
  run $args
  [ "$rc" -eq 2 ] || fail "usage '$args': exit status $rc, want 2"
  grep -q "usage:" "$TMP/err" || fail "usage '$args': no usage text on stderr"
done

if [ "$failures" -eq 0 ]; then
  echo "test_tutti_run: all checks passed"
  exit 0
fi
echo "test_tutti_run: $failures check(s) failed"
exit 1
