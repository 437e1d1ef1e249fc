#!/usr/bin/env python3
"""Summarises bench/init_measure.sh's output (a file, or stdin): per n, the median [min-max]
of init_s (cold and cached) and of every figure of the cold runs, one column per build, and
the ratio of the second build's median to the first's."""
import collections
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for line in open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin:
    f = line.split("#")[0].split()
    if len(f) < 3 or not f[1].startswith("n=") or f[2] not in ("cold", "cached"):
        continue
    if f[0] not in order:
        order.append(f[0])
    for kv in f[3:]:
        k, _, v = kv.partition("=")
        try:
            runs[(f[0], f[1], f[2])][k].append(float(v))
        except ValueError:
            pass
for n in sorted({k[1] for k in runs}, key=lambda s: int(s[2:])):
    for mode in ("cold", "cached"):
        keys = [(b, n, mode) for b in order if (b, n, mode) in runs]
        if not keys:
            continue
        print(f"## {n} {mode}")
        names = []
        for k in keys:
            names += [x for x in runs[k] if x not in names and x != "load"]
        for name in names if mode == "cold" else ["init_s"]:
            cells, meds = [], []
            for k in keys:
                v = runs[k].get(name, [])
                if v:
                    meds.append(statistics.median(v))
                    cells.append(f"{k[0]} {meds[-1]:.4g} [{min(v):.3g}-{max(v):.3g}]")
            ratio = f"  ratio {meds[1] / meds[0]:.2f}" if len(meds) == 2 and meds[0] else ""
            print(f"  {name:20s} " + "  |  ".join(cells) + ratio)
