#!/usr/bin/env bash
# nccl-tests command lines run unchanged and their output parses as nccl-tests' does: every
# program name, every nccl-tests flag (GPU-only ones accepted), -g/-t other than 1 refused with
# a clear message (status 2), and the closing "# Out of bounds values : 0 OK" and
# "# Avg bus bandwidth    : X" lines, X the mean of the busbw columns, as a parser reads them.
#   nccl_cli_check.sh BIN_DIR
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "nccl_cli_check: FAIL: $*" >&2; exit 1; }

"$bin/tutti-run" -n 2 "$bin/all_reduce_perf" -b 8 -e 1M -f 2 -g 1 >"$tmp/ar" || fail "all_reduce_perf failed"
sed -i 's/^\[0\] //' "$tmp/ar"
/usr/bin/python3 - "$tmp/ar" <<'PY' || fail "the all_reduce_perf output does not parse as nccl-tests'"
import re, sys
text = open(sys.argv[1]).read()
oob = re.search(r"^# Out of bounds values : (\d+) (OK|FAILED)$", text, re.M)
avg = re.search(r"^# Avg bus bandwidth    : ([0-9.eE+-]+)", text, re.M)
assert oob and oob.group(1) == "0" and oob.group(2) == "OK", "no '# Out of bounds values : 0 OK'"
assert avg, "no '# Avg bus bandwidth    : X'"
rows = [l.split() for l in text.splitlines() if l and not l.startswith("#") and l.split()[0].isdigit()]
sizes = [int(r[0]) for r in rows]
assert sizes == [8 << i for i in range(18)], sizes  # 8 B .. 1 MiB, factor 2
busbw = [float(r[i]) for r in rows for i in (7, 11)]  # nccl-tests' out-of-place, in-place busbw
want = sum(busbw) / len(busbw)
assert abs(float(avg.group(1)) - want) <= 1e-3 * want + 1e-3, (avg.group(1), want)
assert all(r[8] == "0" and r[12] == "0" for r in rows), "a #wrong column is not 0"
print("parsed %d rows, avg busbw %s" % (len(rows), avg.group(1)))
PY
for p in all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
         sendrecv_perf gather_perf scatter_perf; do
  "$bin/tutti-run" -n 2 "$bin/$p" -b 8 -e 4k -f 8 -n 2 -w 1 -g 1 -t 1 -c 1 -a 3 -m 1 -N 1 -p 0 -y 0 \
    -G 0 -C 0 -R 0 -M 0 -T 60 -z 1 -d float -o sum -r 0 -i 1M >"$tmp/$p" || fail "$p failed"
  grep -q '# Out of bounds values : 0 OK' "$tmp/$p" || fail "$p: no '# Out of bounds values : 0 OK'"
  grep -q '# Avg bus bandwidth    : ' "$tmp/$p" || fail "$p: no '# Avg bus bandwidth'"
done
for flag in "-g 2" "-t 4"; do
  # shellcheck disable=SC2086
  "$bin/tutti-run" -n 2 "$bin/all_reduce_perf" $flag >"$tmp/bad" 2>&1
  [ $? -eq 2 ] || fail "$flag is not refused with status 2"
  grep -q 'one CPU rank per process' "$tmp/bad" || fail "$flag: no clear message"
done
echo "nccl_cli_check: ok"
