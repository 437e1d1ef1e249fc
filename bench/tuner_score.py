#!/usr/bin/env python3
"""Scores the cost model's picks offline against the forced times of bench-tuner tables.

usage: bench/tuner_score.py [--info TUTTI_INFO] [--ns N,N...] [--current-model] [--ratios]
                            [--all] TUNER_MD...

For every cell of every TUNER_MD (written by bench/tuner_check.py: every algorithm forced,
timed; both its tables, one job and separate runs), asks `tutti-info --explain` (default
build/bin/tutti-info) which algorithm the model picks there, and counts the cells where that
algorithm's forced time is within 10% of the best forced time. The model is the one the
table's run used (its "The model of every run" line, written to a TUTTI_TUNE_FILE), so a
change to the cost functions is judged against the measured times and the machine figures of
the runs that measured them, without the run-to-run noise of timing auto again;
--current-model uses whatever tutti-info obtains instead (its cache file, or the environment's
TUTTI_TUNE_FILE), as does a table without that line. Prints the missed cells (--all: every
cell) with pick, its forced time over the best, and each algorithm's predicted / measured time
(us); --ratios adds, per n, size class (>= 16 MiB or not) and algorithm, the median, least and
largest measured / predicted time.
"""
import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile


def model_file(text):
    """The table's model as a tuning file, or None."""
    m = re.search(r"The model of every run[^:]*: (tutti-tune-table 1;[^\n]*)", text)
    if not m:
        return None
    lines = ["tutti-tune-table 1"]
    for part in m.group(1).split(";")[1:]:
        key, _, value = part.strip().rstrip(".").partition(" ")
        if key != "origin":
            lines.append(f"{key} {value}")
    f = tempfile.NamedTemporaryFile("w", suffix=".tune", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


def tables(text):
    """{"one"|"sep": {(coll, n, size): {algo: forced us}}}."""
    out = {"table": {}}
    part = out["table"]  # an older table, without the two headings
    for line in text.splitlines():
        if line.startswith("## In one job"):
            part = out.setdefault("one", {})
        elif line.startswith("## Separate"):
            part = out.setdefault("sep", {})
        if not line.startswith("| ") or "---" in line or "| collective" in line:
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        words = c[-1].replace(",", " ").split()  # "ring 7.58 cma 10.1" or "ring 7.58, cma 10.1"
        part[(c[0], c[1], int(c[2]))] = {words[i]: float(words[i + 1])
                                        for i in range(0, len(words) - 1, 2)}
    return {k: v for k, v in out.items() if v}


@functools.lru_cache(maxsize=None)
def explain(info, tune_file, coll, size, n):
    """The model's pick and every candidate's predicted time (us) for one cell."""
    env = dict(os.environ)
    if tune_file:
        env["TUTTI_TUNE_FILE"] = tune_file
    out = subprocess.run([info, "--explain", coll, str(size), n, "shm"], env=env,
                         capture_output=True, text=True).stdout
    pick = re.search(r"pick: (\S+)", out).group(1)
    preds = {a: float(p) for a, p in re.findall(r"^\s+(\w+)\s+([\d.]+)$", out, re.M)}
    return pick, preds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--info", default="build/bin/tutti-info")
    ap.add_argument("--ns", help="only these n (comma-separated)")
    ap.add_argument("--current-model", action="store_true")
    ap.add_argument("--ratios", action="store_true")
    ap.add_argument("--all", action="store_true", help="print every cell, not only misses")
    args = ap.parse_args()
    ns = args.ns.split(",") if args.ns else None
    hits = total = 0
    ratios = {}
    for md in args.tables:
        text = open(md).read()
        tune_file = None if args.current_model else model_file(text)
        name = os.path.join(os.path.basename(os.path.dirname(md)), os.path.basename(md))
        for which, cells in tables(text).items():
            for (coll, n, size), forced in sorted(cells.items()):
                if ns and n not in ns:
                    continue
                pick, preds = explain(args.info, tune_file, coll, size, n)
                ratio = forced.get(pick, float("nan")) / min(forced.values())
                total += 1
                hits += ratio <= 1.10
                for a, p in preds.items():
                    if a in forced and p > 0:
                        ratios.setdefault((int(n), size >= 1 << 24, a), []).append(forced[a] / p)
                if ratio <= 1.10 and not args.all:
                    continue
                order = " ".join(f"{a}:{p:.0f}/{forced.get(a, 0):.0f}"
                                 for a, p in sorted(preds.items(), key=lambda x: x[1]))
                print(f"{name} {which} {coll:15s} n={n} {size:>9d} pick {pick:18s} {ratio:5.2f} "
                      f"{'hit' if ratio <= 1.10 else 'MISS'}  predicted/measured: {order}")
    print(f"{hits} of {total} picks within 10% of the best forced time"
          f" ({100 * hits / max(total, 1):.0f}%)")
    if args.ratios:
        for (n, large, a), v in sorted(ratios.items()):
            v.sort()
            print(f"n={n} {'>= 16 MiB' if large else '<  16 MiB'} {a:18s} measured/predicted "
                  f"median {v[len(v) // 2]:.2f}, {v[0]:.2f} to {v[-1]:.2f} ({len(v)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
