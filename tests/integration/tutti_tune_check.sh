#!/usr/bin/env bash
# tutti_tune_check: tutti-tune's two modes, run small (n = 2, 64 KiB and 1 MiB, two
# collectives, short slices), their outputs recomputed here from the times they print.
#  - table mode: each cell's comment names the fastest of the times it lists, and a job that
#    loads the table (tutti-info --explain with TUTTI_TUNE_FILE) picks that algorithm at that
#    size by a rule of the file;
#  - --check: each row's best is the fastest forced time it lists, auto/best is auto's time
#    over it, a hit is a ratio <= 1.10, the pick is one of the algorithms that ran, and the
#    summary counts the rows and hits given.
# Usage: tutti_tune_check.sh TUTTI_TUNE TUTTI_INFO
set -u
TUNE=$1
INFO=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export XDG_CACHE_HOME=$dir/cache TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=60
args=(--ns 2 --sizes 64k,1m --colls allreduce,broadcast --rounds 3 --slice-ms 2)

if ! "$TUNE" -o "$dir/t.table" "${args[@]}" >"$dir/table.out" 2>"$dir/table.err"; then
  echo "tutti_tune_check: FAILED: tutti-tune failed:"; cat "$dir/table.err"; exit 1
fi
if ! "$TUNE" --check "${args[@]}" >"$dir/check.md" 2>"$dir/check.err"; then
  echo "tutti_tune_check: FAILED: tutti-tune --check failed:"; cat "$dir/check.err"; exit 1
fi
# The winner the table's job picks, per comment line: collective size algorithm.
while read -r coll size; do
  printf '%s %s %s\n' "$coll" "$size" \
    "$(TUTTI_TUNE_FILE=$dir/t.table "$INFO" --explain "$coll" "$size" 2 | grep '^pick:')"
done < <(sed -n 's/^# \([a-z_]*\) n=2 \([0-9]*\) B:.*/\1 \2/p' "$dir/t.table") >"$dir/picks"

/usr/bin/python3 - "$dir/t.table" "$dir/picks" "$dir/check.md" <<'PY'
import re, sys
table, picks, check = (open(p).read() for p in sys.argv[1:4])
bad = []
won = {}
for m in re.finditer(r"^# (\w+) n=2 (\d+) B:(.*) -> (\w+)$", table, re.M):
    coll, size, body, winner = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    times = {a: float(t) for a, t in re.findall(r" (\w+) ([0-9.]+) us", body)}
    # The comment prints one decimal: a winner tied with another at that
    # precision (ring 14.5, tree 14.5) is still the fastest.
    if not times or times.get(winner) != min(times.values()):
        bad.append(f"table: {coll} {size}: '{winner}' is not the fastest of {times}")
    won[(coll, size)] = winner
if len(won) != 4:
    bad.append(f"table: {len(won)} cell comments, not 4")
for line in picks.splitlines():
    coll, size, rest = line.split(" ", 2)
    want = won.get((coll, int(size)))
    if not rest.startswith(f"pick: {want} ") or "TUTTI_TUNE_FILE" not in rest:
        bad.append(f"table: a job loading it picks '{rest}' for {coll} {size}, not {want} by a rule")

rows = [l for l in check.splitlines() if re.match(r"\| (allreduce|broadcast) \| 2 \|", l)]
hits = 0
for l in rows:
    c = [x.strip() for x in l.strip("|").split("|")]
    coll, size, pick, auto_us, best, best_us, ratio, res = c[0], c[2], c[3], float(c[4]), c[5], float(c[6]), float(c[7]), c[8]
    forced = {a: float(t) for a, t in re.findall(r"(\w+) ([0-9.e+]+)", c[-1])}
    fastest = min(forced, key=forced.get)
    if forced[best] != forced[fastest] or abs(best_us - forced[fastest]) > 1e-3 * forced[fastest] + 1e-3:
        bad.append(f"check: {coll} {size}: best {best} {best_us} but {fastest} {forced[fastest]}")
    if abs(ratio - auto_us / best_us) > 0.006 + 1e-3 * ratio:
        bad.append(f"check: {coll} {size}: auto/best {ratio}, recomputed {auto_us / best_us:.3f}")
    # Printed times and ratio are rounded: within 0.01 of the line either mark is right.
    if abs(ratio - 1.10) > 0.01 and (res == "**hit**") != (ratio <= 1.10):
        bad.append(f"check: {coll} {size}: ratio {ratio} marked {res}")
    if pick not in forced:
        bad.append(f"check: {coll} {size}: pick '{pick}' is none of the algorithms timed")
    hits += res == "**hit**"
m = re.search(r"\*\*(\d+) of (\d+) cells within 10%\*\*", check)
if len(rows) != 4 or not m or int(m.group(1)) != hits or int(m.group(2)) != len(rows):
    bad.append(f"check: {len(rows)} rows, {hits} hits, summary {m.group(0) if m else None}")
if bad:
    print("tutti_tune_check: FAILED:\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"tutti_tune_check: table picks {sorted(set(won.values()))} as its rules say; "
      f"--check: {len(rows)} rows consistent ({m.group(0)})")
PY
