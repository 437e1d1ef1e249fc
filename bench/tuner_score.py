#!/usr/bin/env python3
"""Scores the cost model's picks offline against the forced times of a bench-tuner table.

usage: bench/tuner_score.py TUNER_MD [TUTTI_INFO] [N,N...]

For every cell of TUNER_MD (written by bench/tuner_check.py: every algorithm forced, timed),
asks `tutti-info --explain` (default build/bin/tutti-info) which algorithm the model picks
there, and counts the cells where that algorithm's forced time is within 10% of the best
forced time. The model is whatever tutti-info obtains (TUTTI_TUNE_FILE gives it a fixed one),
so a model change can be judged against one set of measured times, without the run-to-run
noise of timing auto again. Prints every cell: pick, its forced time over the best, and each
algorithm's predicted / measured time (us).
"""
import re
import subprocess
import sys


def main():
    md = sys.argv[1]
    info = sys.argv[2] if len(sys.argv) > 2 else "build/bin/tutti-info"
    ns = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    hits = total = 0
    for line in open(md):
        if not line.startswith("| ") or "auto us" in line or "---" in line:
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        coll, n, size = c[0], c[1], int(c[2])
        if ns and n not in ns:
            continue
        forced = {}
        for part in c[-1].split(", "):
            algo, t = part.rsplit(" ", 1)
            forced[algo] = float(t)
        out = subprocess.run([info, "--explain", coll, str(size), n, "shm"],
                             capture_output=True, text=True).stdout
        pick = re.search(r"pick: (\S+)", out).group(1)
        preds = dict(re.findall(r"^\s+(\w+)\s+([\d.]+)$", out, re.M))
        ratio = forced.get(pick, float("nan")) / min(forced.values())
        total += 1
        hits += ratio <= 1.10
        order = " ".join(f"{a}:{float(p):.0f}/{forced.get(a, 0):.0f}"
                         for a, p in sorted(preds.items(), key=lambda x: float(x[1])))
        print(f"{coll:15s} n={n} {size:>9d} pick {pick:18s} {ratio:5.2f} "
              f"{'hit' if ratio <= 1.10 else 'MISS'}  predicted/measured: {order}")
    print(f"{hits} of {total} picks within 10% of the best forced time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
