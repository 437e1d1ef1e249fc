#!/usr/bin/env bash
# explain_remember_check: tutti-info --explain tells what a job would take from the picks file
# earlier jobs left (TUTTI_TUNE_REMEMBER, docs/tuning.md "Remembered picks"):
#  - after a 2-rank job settles its 1 MiB all-reduce, --explain names the algorithm the file's
#    line for that shape and size holds (read here from the file itself);
#  - with that line rewritten to another of the candidates --explain lists, it names that one
#    (so it reads the file, not the model);
#  - a size with no line, and a file keyed for another host, say there is none.
# Usage: explain_remember_check.sh TUTTI_RUN TUTTI_BENCH TUTTI_INFO
set -u
RUN=$1
BENCH=$2
INFO=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export XDG_CACHE_HOME=$dir/cache TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=60 TUTTI_TUNE_REMEMBER=1
fail() { echo "explain_remember_check: FAILED: $*"; exit 1; }

# Enough calls of 1 MiB for the trials to finish (at most a few dozen at n = 2).
"$RUN" -n 2 "$BENCH" allreduce --sizes 1m -n 60 >"$dir/bench.out" 2>&1 ||
  { cat "$dir/bench.out"; fail "the job failed"; }
picks=$dir/cache/tutti/picks
[ -f "$picks" ] || fail "the job left no picks file"
want=$(awk '$1 ~ /^n=2,/ && $2 == "allreduce" && $3 == 1048576 {a = $4} END {print a}' "$picks")
[ -n "$want" ] || { cat "$picks"; fail "no line for the 2-rank 1 MiB all-reduce"; }

"$INFO" --explain allreduce 1M 2 >"$dir/e1" 2>&1 || { cat "$dir/e1"; fail "--explain failed"; }
grep -q "an earlier job settled on $want; a job of this shape runs it from its first call" \
  "$dir/e1" || { cat "$picks" "$dir/e1"; fail "--explain does not name the file's $want"; }

# Another candidate --explain lists for the size (from its online line), written into the line.
other=$(sed -n 's/.* run [a-z_]* once, then \(.*\) in turns of .*/\1/p' "$dir/e1" |
        tr ',' '\n' | tr -d ' ' | grep -vx "$want" | head -1)
[ -n "$other" ] || { cat "$dir/e1"; fail "no other candidate listed"; }
awk -v o="$other" '$1 ~ /^n=2,/ && $2 == "allreduce" && $3 == 1048576 {$4 = o} {print}' \
  "$picks" >"$dir/p" && cp "$dir/p" "$picks"
"$INFO" --explain allreduce 1M 2 >"$dir/e2" 2>&1
grep -q "an earlier job settled on $other;" "$dir/e2" ||
  { cat "$picks" "$dir/e2"; fail "with the line rewritten to $other, --explain does not name it"; }

"$INFO" --explain allreduce 2M 2 >"$dir/e3" 2>&1
grep -q "none for shape n=2,.* at this size" "$dir/e3" ||
  { cat "$dir/e3"; fail "a size with no line is not said to have none"; }

sed -i '2s/^key .*/key cpu=elsewhere/' "$picks"
"$INFO" --explain allreduce 1M 2 >"$dir/e4" 2>&1
grep -q "none for this host yet" "$dir/e4" ||
  { cat "$dir/e4"; fail "another host's file is not said to have none"; }
echo "explain_remember_check: --explain names the file's $want, then $other; none elsewhere"
