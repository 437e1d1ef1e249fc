#!/bin/bash
# tutti-bench's interface, as scripts read it: nccl-tests' column header, one well-formed JSON
# object per row with the numbers consistent with each other (busbw = algbw x nccl-tests'
# factor, algbw = size/time), the roofline and page-fault fields, and exit status 2 for bad
# usage. Correctness of the results is tutti-bench's own -c 1 (exit 1 on a wrong element).
# Usage: bench_check.sh BIN_DIR
set -u
bin=$1
fail() { echo "bench_check: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin/tutti-run" -n 3 "$bin/tutti-bench" allreduce -b 8 -e 4k -f 8 -n 3 -w 1 >"$tmp/text" ||
  fail "text run failed"
grep -Eq '^\[0\] # +size +count +type +redop +root +time +algbw +busbw +#wrong +time +algbw +busbw +#wrong *$' \
  "$tmp/text" || fail "the column header is not nccl-tests' (out-of-place and in-place)"

"$bin/tutti-run" -n 3 "$bin/tutti-bench" all --sizes 8,1k,64k --json --roofline -n 3 -w 1 \
  >"$tmp/json" || fail "json run failed"
sed -n 's/^\[0\] //p' "$tmp/json" | grep '^{' >"$tmp/rows"
[ "$(wc -l <"$tmp/rows")" -eq 27 ] || fail "expected 27 JSON rows (9 collectives x 3 sizes)"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 - "$tmp/rows" <<'EOF' || fail "JSON rows are inconsistent"
import json, sys
factor = {"allreduce": 4 / 3, "allgather": 2 / 3, "reduce_scatter": 2 / 3, "broadcast": 1,
          "reduce": 1, "alltoall": 2 / 3, "sendrecv": 1, "gather": 2 / 3, "scatter": 2 / 3}
oop_only = {"alltoall", "sendrecv", "gather", "scatter"}
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert o["nranks"] == 3 and o["type"] == "float32", o
    assert o["roofline"]["copy_gbs"] > 0 and o["roofline"]["reduce_gbs"] > 0, o
    assert ("in_place" in o) == (o["collective"] not in oop_only), o
    for k in ("out_of_place", "in_place"):
        if k not in o:
            continue
        v = o[k]
        assert v["wrong"] == 0 and v["iters"] == 3 and v["minflt_per_op"] >= 0 and "allocs_per_op" in v, o
        algbw = o["size"] / v["time_us"] * 1e-3
        # time_us is printed to 1e-4 us: allow that rounding, relative to the time
        tol = (1e-3 + 6e-5 / v["time_us"]) * algbw + 1e-5
        assert abs(v["algbw_gbs"] - algbw) <= tol, (o, algbw)
        want = v["algbw_gbs"] * factor[o["collective"]]
        assert abs(v["busbw_gbs"] - want) <= 1e-3 * want + 1e-5, (o, want)
        # The bound, from the two measured rates: an out-of-place all-gather or gather copies
        # the rank's own block too, so (n-1)/n of the copy rate bounds its busbw.
        c, r, n = o["roofline"]["copy_gbs"], o["roofline"]["reduce_gbs"], o["nranks"]
        bound = {"allreduce": 2 / (1 / r + 1 / c), "reduce_scatter": r, "reduce": r}.get(
            o["collective"], c)
        if o["collective"] in ("allgather", "gather") and k == "out_of_place":
            bound = c * (n - 1) / n
        assert abs(v["bound_gbs"] - bound) <= 1e-3 * bound + 1e-4, (o, k, bound)
        assert abs(v["pct_of_bound"] - 100 * v["busbw_gbs"] / v["bound_gbs"]) < 0.1
    first = o["out_of_place"] if "out_of_place" in o else o["in_place"]
    assert o["roofline"]["bound_gbs"] == first["bound_gbs"], o
EOF
fi

"$bin/tutti-run" -n 2 "$bin/tutti-bench" -c 2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "-c 2 is not rejected with status 2"
"$bin/tutti-run" -n 2 "$bin/tutti-bench" nosuchcoll >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown collective is not rejected with status 2"
echo "bench_check: ok"
