#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.c) with clang from the library's sources,
# instrumented for libFuzzer, ASan and UBSan, then runs each for the given seconds from its
# seed corpus (tests/fuzz/corpus/<target>/). Exits 1 if any target crashed or broke a
# property (the input is saved as <build-dir>/crashes/<target>-*), 77 (ctest's skip) if clang
# or libFuzzer is missing.
#
#   tests/fuzz/build_and_run.sh <build-dir> <seconds-per-target> [--seeds]
#
# --seeds regenerates tests/fuzz/corpus from make_seeds.c before running. FUZZ_PARALLEL=2 runs
# two targets at a time; FUZZ_TARGETS="fuzz_rdv fuzz_env" runs only those; CLANG picks the
# compiler. Generated inputs go to <build-dir>/corpus/<target>/, never to the seed corpus.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <build-dir> <seconds-per-target> [--seeds]" >&2
  exit 2
fi
B=$1
SECONDS_EACH=$2
SEEDS=${3:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR=$SRC/tests/fuzz
mkdir -p "$B"
B=$(cd "$B" && pwd)

CLANG=${CLANG:-}
if [ -z "$CLANG" ]; then
  for c in clang clang-14 clang-15 clang-16 clang-17 clang-18; do
    if command -v "$c" >/dev/null 2>&1; then CLANG=$c; break; fi
  done
fi
if [ -z "$CLANG" ]; then
  echo "SKIP: no clang found (install clang and libclang-rt-dev for libFuzzer)"
  exit 77
fi
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror $SAN -I$SRC/include -I$SRC/src"
LIBS="-lcrypto -lpthread -lm"

# libFuzzer ships separately from clang on Debian (libclang-rt-N-dev): probe for it.
mkdir -p "$B/obj"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
  >"$B/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$B/probe.c" -o "$B/probe" >"$B/probe.log" 2>&1; then
  echo "SKIP: $CLANG cannot link libFuzzer programs:"
  cat "$B/probe.log"
  exit 77
fi

# The library, rebuilt where a source or any header is newer than its object.
newest_header=$(find "$SRC/src" "$SRC/include" -name '*.h' -printf '%T@\n' | sort -n | tail -1)
objs=()
build_list=()
while IFS= read -r src; do
  rel=${src#"$SRC/src/"}
  obj=$B/obj/${rel//\//_}.o
  objs+=("$obj")
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] ||
     awk -v h="$newest_header" -v o="$(stat -c %Y "$obj")" 'BEGIN { exit !(h > o) }'; then
    build_list+=("$src:$obj")
  fi
done < <(find "$SRC/src" -name '*.c' | sort)
if [ ${#build_list[@]} -gt 0 ]; then
  echo "compiling ${#build_list[@]} library sources with $CLANG"
  printf '%s\n' "${build_list[@]}" |
    CLANG=$CLANG CFLAGS="$CFLAGS" xargs -P "${FUZZ_JOBS:-2}" -I{} sh -c \
      'src=${1%%:*}; obj=${1#*:}; $CLANG $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj"' \
      _ {}
  rm -f "$B/libtutti_fuzz.a"
fi
[ -f "$B/libtutti_fuzz.a" ] || ar rcs "$B/libtutti_fuzz.a" "${objs[@]}"

targets=()
for t in "$FUZZ_DIR"/fuzz_*.c; do
  name=$(basename "$t" .c)
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  targets+=("$name")
  if [ ! -x "$B/$name" ] || [ "$t" -nt "$B/$name" ] || [ "$B/libtutti_fuzz.a" -nt "$B/$name" ] ||
     [ "$FUZZ_DIR/fuzz_common.h" -nt "$B/$name" ]; then
    "$CLANG" $CFLAGS -fsanitize=fuzzer -I"$FUZZ_DIR" "$t" "$B/libtutti_fuzz.a" $LIBS -o "$B/$name"
  fi
done

if [ "$SEEDS" = "--seeds" ]; then
  "$CLANG" $CFLAGS -I"$FUZZ_DIR" "$FUZZ_DIR/make_seeds.c" "$B/libtutti_fuzz.a" $LIBS \
    -fsanitize=fuzzer-no-link -o "$B/make_seeds"
  rm -rf "$FUZZ_DIR/corpus"
  "$B/make_seeds" "$FUZZ_DIR/corpus"
  echo "seed corpus written to $FUZZ_DIR/corpus"
fi

[ "$SECONDS_EACH" -gt 0 ] || exit 0

mkdir -p "$B/crashes" "$B/logs"
run_one() {
  local name=$1
  mkdir -p "$B/corpus/$name"
  local seeds=$FUZZ_DIR/corpus/$name
  [ -d "$seeds" ] || seeds=
  # Generated inputs go to the first corpus folder only, so the seed corpus stays as committed.
  "$B/$name" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$B/crashes/$name-" \
    "$B/corpus/$name" $seeds >"$B/logs/$name.log" 2>&1
}

pids=()
names=()
status=0
report() {
  local name=$1 rc=$2 log=$B/logs/$1.log
  local execs cov corp
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(ls "$B/corpus/$name" | wc -l)
  done_n=$((done_n + 1))
  local left=$((${#targets[@]} - done_n))
  printf '%-12s rc=%-3s execs=%-10s cov=%-6s corpus=%s  [%d/%d done, %d left, about %d s to go]\n' \
    "$name" "$rc" "${execs:-?}" "${cov:-?}" "$corp" "$done_n" "${#targets[@]}" "$left" \
    $(( (left + parallel - 1) / parallel * SECONDS_EACH ))
  if [ "$rc" != 0 ]; then
    echo "---- $name FAILED; last lines of $log:"
    tail -40 "$log"
    status=1
  fi
}
parallel=${FUZZ_PARALLEL:-1}
done_n=0
echo "fuzzing ${#targets[@]} targets for $SECONDS_EACH s each, $parallel at a time: about $(( (${#targets[@]} + parallel - 1) / parallel * SECONDS_EACH )) s"
for name in "${targets[@]}"; do
  echo "fuzzing $name ($((done_n + ${#pids[@]} + 1))/${#targets[@]}) for $SECONDS_EACH s"
  run_one "$name" &
  pids+=($!)
  names+=("$name")
  if [ ${#pids[@]} -ge "$parallel" ]; then
    rc=0; wait "${pids[0]}" || rc=$?
    report "${names[0]}" "$rc"
    pids=("${pids[@]:1}"); names=("${names[@]:1}")
  fi
done
while [ ${#pids[@]} -gt 0 ]; do
  rc=0; wait "${pids[0]}" || rc=$?
  report "${names[0]}" "$rc"
  pids=("${pids[@]:1}"); names=("${names[@]:1}")
done
exit $status
