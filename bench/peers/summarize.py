#!/usr/bin/python3
"""summarize.py RAW OUT: peers.md and peers_busbw.png from bench/peers/run.sh's raw files.

RAW holds r<round>_<program>_n<n>.jsonl (the harnesses' --json lines), tcp loopback and
latency floor lines and sysinfo.txt. Every cell is a median over rounds; every ratio is the
median of the per-round ratios (tutti against the peers of the same round, which ran next to
it), as the issue asks.
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

PEERS = ["ompi", "mpich", "gloo"]
# The runs with a roofline: tutti's, and its n = 2 run on registered buffers (tutti-bench -R 1).
ROOF_PROGS = (("tutti", "plain"), ("tutti_reg", "registered"))
MPIS = ["ompi", "mpich"]
LABEL = {"tutti": "tutti", "ompi": "Open MPI", "mpich": "MPICH", "gloo": "gloo",
         "tutti_tcp": "tutti tcp"}
COLL_LABEL = {"allreduce": "all-reduce", "allgather": "all-gather",
              "reduce_scatter": "reduce-scatter", "broadcast": "broadcast"}
LAT_SIZES = (8, 1024)  # latency cells; the others are busbw cells


def human(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d %s" % (size >> shift, unit)
    return "%d B" % size


def nominal(size, n):
    """The sweep's size for a row: all-gather and reduce-scatter round to n elements."""
    for s in NOMINAL:
        if s == size or max(1, s // 4 // n) * 4 * n == size:
            return s
    return size


def load(raw):
    """data[(program, n, coll, size)][round] = the row's best variant (dict)."""
    data, roof, tcp, floor = {}, {}, {}, {}
    for path in sorted(glob.glob(os.path.join(raw, "r*_*.jsonl"))):
        m = re.match(r"r(\d+)_(.+)_n(\d+)\.jsonl$", os.path.basename(path))
        rnd, prog, n = int(m.group(1)), m.group(2), int(m.group(3))
        for line in open(path):
            o = json.loads(line)
            if "tcp_loopback" in o:
                tcp[rnd] = o["tcp_loopback"]
                continue
            if "shm_floor" in o:
                floor[rnd] = o["shm_floor"]
                continue
            # A row may hold both variants (gloo_bench without --natural): the faster one counts.
            variants = [o[k] for k in ("out_of_place", "in_place") if k in o]
            best = max(variants, key=lambda v: v["busbw_gbs"])
            key = (prog, n, o["collective"], nominal(o["size"], n))
            data.setdefault(key, {})[rnd] = best
            if "roofline" in o:
                # The variant's own bound where the row has one (an out-of-place all-gather
                # copies the rank's own block too); older rows have the row's only.
                roof.setdefault(key, {})[rnd] = dict(
                    o["roofline"], busbw=best["busbw_gbs"],
                    bound_gbs=best.get("bound_gbs", o["roofline"]["bound_gbs"]))
    return data, roof, tcp, floor


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cell(data, prog, n, coll, size, field):
    return med(v[field] for v in data.get((prog, n, coll, size), {}).values())


def round_ratio(data, n, coll, size, peers, field, better):
    """Median over rounds of tutti / best peer of that round (field: busbw or time)."""
    t = data.get(("tutti", n, coll, size), {})
    rs = []
    for rnd, tv in t.items():
        pv = [data[(p, n, coll, size)][rnd][field] for p in peers
              if rnd in data.get((p, n, coll, size), {})]
        if pv and better(pv) > 0:
            rs.append(tv[field] / better(pv))
    return med(rs)


def fmt(x, digits=3):
    if x is None:
        return "—"
    if x >= 100:
        return "%.0f" % x
    return ("%%.%dg" % digits) % x


def tables(data, ns, colls, sizes):
    out = []
    for n in ns:
        out.append("\n### n = %d\n" % n)
        out.append("busbw in GB/s (higher is better); ratio = tutti / best peer, the median of "
                   "per-round ratios (> 1: tutti faster).\n")
        out.append("| collective | size | tutti | Open MPI | MPICH | gloo | tutti / best MPI | "
                   "tutti / best peer |")
        out.append("|---|---|---|---|---|---|---|---|")
        for c in colls:
            for s in sizes:
                vals = [cell(data, p, n, c, s, "busbw_gbs") for p in ["tutti"] + PEERS]
                rm = round_ratio(data, n, c, s, MPIS, "busbw_gbs", max)
                rp = round_ratio(data, n, c, s, PEERS, "busbw_gbs", max)
                out.append("| %s | %s | %s | %s | %s |" % (
                    COLL_LABEL[c], human(s), " | ".join(fmt(v) for v in vals),
                    fmt(rm, 2) + "×" if rm else "—", fmt(rp, 2) + "×" if rp else "—"))
        out.append("\nlatency: time per call in µs (lower is better); ratio = tutti / best peer "
                   "(< 1: tutti faster).\n")
        out.append("| collective | size | tutti | Open MPI | MPICH | gloo | tutti / best peer |")
        out.append("|---|---|---|---|---|---|---|")
        for c in colls:
            for s in sizes:
                vals = [cell(data, p, n, c, s, "time_us") for p in ["tutti"] + PEERS]
                rp = round_ratio(data, n, c, s, PEERS, "time_us", min)
                out.append("| %s | %s | %s | %s |" % (
                    COLL_LABEL[c], human(s), " | ".join(fmt(v) for v in vals),
                    fmt(rp, 2) + "×" if rp else "—"))
    return out


class Targets:
    def __init__(self):
        self.lines = []

    def add(self, name, value, ok, note=""):
        state = "—" if ok is None else ("**hit**" if ok else "miss")
        self.lines.append("| %s | %s | %s | %s |" % (name, value, state, note))


def floor_note(data, floor, n, c, s):
    """For a symmetric n = 2 latency cell: the floor (one cache-line exchange) next to what
    the target asks, both medians over the rounds that have them."""
    if n != 2 or c == "broadcast" or not floor:
        return ""
    want = []
    for rnd in floor:
        pv = [data[(p, n, c, s)][rnd]["time_us"] for p in PEERS
              if rnd in data.get((p, n, c, s), {})]
        if pv:
            want.append(0.7 * min(pv))
    return "0.7× best peer %s µs; floor %s µs" % (
        fmt(med(want)), fmt(med(v["exchange_us"] for v in floor.values())))


def floor_table(data, floor):
    """Per round: the latency floor beside the n = 2 8-byte all-reduce of tutti and the MPIs."""
    key = lambda p: (p, 2, "allreduce", 8)
    out = ["", "## Latency floor, n = 2", "",
           "`shm_floor`, run at the start of each round: two processes exchange a counter in "
           "their own cache lines (the form of an 8-byte all-reduce, the least any n = 2 "
           "all-reduce must pay per call), and the same as a ping-pong; medians of 5. On a VM "
           "it moves with the vCPUs' placement on host cores.", "",
           "| round | exchange µs | ping-pong µs | tutti all-reduce 8 B µs | best MPI µs | "
           "tutti / floor | best MPI / floor |", "|---|---|---|---|---|---|---|"]
    for rnd in sorted(floor):
        f = floor[rnd]["exchange_us"]
        t = data.get(key("tutti"), {}).get(rnd, {}).get("time_us")
        m = [data[key(p)][rnd]["time_us"] for p in MPIS if rnd in data.get(key(p), {})]
        m = min(m) if m else None
        out.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            rnd, fmt(f), fmt(floor[rnd]["pingpong_us"]), fmt(t), fmt(m),
            fmt(t / f, 2) if t and f else "—", fmt(m / f, 2) if m and f else "—"))
    return out


def targets(data, roof, tcp, floor, ns, colls, sizes):
    t = Targets()
    big = [s for s in sizes if s >= 64 << 10]
    for n in [n for n in ns if n in (2, 4)]:
        for c in colls:
            for s in big:
                r = round_ratio(data, n, c, s, MPIS, "busbw_gbs", max)
                t.add("busbw %s %s n=%d ≥ 1.5× best MPI" % (COLL_LABEL[c], human(s), n),
                      fmt(r, 2) + "×" if r else "no data", r >= 1.5 if r else None)
    for n in [n for n in ns if n in (2, 4)]:
        for c in colls:
            for s in [s for s in sizes if s in LAT_SIZES]:
                r = round_ratio(data, n, c, s, PEERS, "time_us", min)
                t.add("latency %s %s n=%d ≤ 0.7× best peer" % (COLL_LABEL[c], human(s), n),
                      fmt(r, 2) + "×" if r else "no data", r <= 0.7 if r else None,
                      floor_note(data, floor, n, c, s))
    if 8 in ns and 8 in sizes:
        v = cell(data, "tutti", 8, "allreduce", 8, "time_us")
        t.add("n=8 all-reduce 8 B ≤ 30 µs", fmt(v) + " µs" if v else "no data",
              v <= 30 if v else None)
    for prog, label in ROOF_PROGS:
        what = "" if prog == "tutti" else ", %s buffers" % label
        for n in ns:
            for c in colls:
                want = 75 if c in ("allgather", "broadcast") else 60
                bound = "copy" if want == 75 else "reduce"
                for s in [s for s in sizes if s in (16 << 20, 64 << 20)]:
                    rs = roof.get((prog, n, c, s), {})
                    if prog != "tutti" and not rs:
                        continue
                    pct = med(100 * v["busbw"] / v["bound_gbs"] for v in rs.values()
                              if v["bound_gbs"] > 0)
                    t.add("roofline %s %s n=%d ≥ %d%% of the %s bound%s" % (
                        COLL_LABEL[c], human(s), n, want, bound, what),
                        "%.0f%%" % pct if pct is not None else "no data",
                        pct >= want if pct is not None else None,
                        "bound %s GB/s" % fmt(med(v["bound_gbs"] for v in rs.values())))
    if 2 in ns and 8 in ns and 16 << 20 in sizes:
        a = cell(data, "tutti", 8, "allreduce", 16 << 20, "busbw_gbs")
        b = cell(data, "tutti", 2, "allreduce", 16 << 20, "busbw_gbs")
        r = a / b if a and b else None
        t.add("n=8 16 MiB all-reduce busbw ≥ 50% of n=2", "%.0f%%" % (100 * r) if r else "no data",
              r >= 0.5 if r else None, "%s / %s GB/s" % (fmt(a), fmt(b)))
    if 16 << 20 in sizes:
        s = 16 << 20
        tt = data.get(("tutti_tcp", 2, "allreduce", s), {})
        gl = data.get(("gloo", 2, "allreduce", s), {})
        rs = [tt[r]["busbw_gbs"] / gl[r]["busbw_gbs"] for r in tt if r in gl]
        r = med(rs)
        t.add("tcp n=2 16 MiB all-reduce busbw ≥ 2× gloo", fmt(r, 2) + "×" if r else "no data",
              r >= 2 if r else None)
        rs = [tt[r]["busbw_gbs"] / tcp[r]["median_gbs"] for r in tt if r in tcp]
        r = med(rs)
        t.add("tcp n=2 16 MiB all-reduce busbw ≥ 70% of raw loopback TCP",
              "%.0f%%" % (100 * r) if r else "no data", r >= 0.7 if r else None,
              "loopback %s GB/s" % fmt(med(v["median_gbs"] for v in tcp.values())))
    # Per cell the median over rounds (one round's stray fault is noise), then the worst cell.
    for field, what in (("minflt_per_op", "minor page faults"), ("allocs_per_op", "allocations")):
        cells = [(med([v[field] for v in rv.values() if v.get(field, -1) >= 0]), k)
                 for k, rv in data.items() if k[0] == "tutti"]
        cells = [c for c in cells if c[0] is not None]
        if not cells:
            t.add("0 %s per op after warm-up, every size" % what, "not measured here", None,
                  "tutti-bench --faults counts them; sanitizer builds do not count allocations")
            continue
        worst = max(cells)
        k = worst[1]
        t.add("0 %s per op after warm-up, every size" % what, "worst %.2f / op" % worst[0],
              worst[0] == 0, "at %s %s n=%d (median over rounds)" %
              (COLL_LABEL.get(k[2], k[2]), human(k[3]), k[1]))
    tuner = os.path.join(os.path.dirname(__file__), "..", "results", "tuner.md")
    m = None
    if os.path.exists(tuner):
        m = re.search(r"\*\*(\d+) of (\d+) cells within 10%\*\*", open(tuner).read())
    if m:
        t.add("tuner pick within 10% of the best algorithm", "%s of %s cells" % m.groups(),
              m.group(1) == m.group(2), "bench/results/tuner.md (make bench-tuner)")
    else:
        t.add("tuner pick within 10% of the best algorithm", "not measured here", None,
              "make bench-tuner writes bench/results/tuner.md")
    return t.lines


def plot(data, ns, colls, sizes, out):
    """peers_busbw.png: busbw against size, one panel per collective; colour = program,
    dash = n. Returns the gnuplot error text, or ''."""
    datfile = os.path.join(out, "peers_busbw.dat")
    series = [(p, n) for p in ["tutti"] + PEERS for n in ns]
    with open(datfile, "w") as f:
        f.write("# size " + " ".join("%s_n%d" % s for s in series) + "\n")
        for i, c in enumerate(colls):
            f.write("\n\n# %s\n" % c) if i else f.write("# %s\n" % c)
            for s in sizes:
                vals = [cell(data, p, n, c, s, "busbw_gbs") for p, n in series]
                f.write("%d %s\n" % (s, " ".join("NaN" if v is None or v <= 0 else "%.6g" % v
                                                 for v in vals)))
    color = {"tutti": "#d62728", "ompi": "#1f77b4", "mpich": "#2ca02c", "gloo": "#9467bd"}
    g = ['set terminal pngcairo size 1400,1000 font "sans,10"',
         'set output "%s"' % os.path.join(out, "peers_busbw.png"),
         'set multiplot layout 2,2 title "busbw vs size, median of rounds (%s)"' % ", ".join(
             "%s n=%d" % (d, n) for d, n in zip(("solid", "dashed", "dotted", "dash-dot"), ns)),
         "set logscale xy", "set grid", "set xlabel \"size (bytes)\"",
         "set ylabel \"busbw (GB/s)\"", "set format y \"%g\"", "set key left top font \",8\"",
         "set datafile missing \"NaN\"",
         "set xtics (%s)" % ", ".join('"%s" %d' % (human(s), s) for s in sizes)]
    for i, c in enumerate(colls):
        g.append('set title "%s"' % COLL_LABEL[c])
        plots = []
        for j, (p, n) in enumerate(series):
            dash = 1 + ns.index(n)
            plots.append('"%s" index %d using 1:%d with linespoints lw 2 lc rgb "%s" dt %d '
                         'title "%s n=%d"' % (datfile, i, j + 2, color[p], dash, LABEL[p], n))
        g.append("plot " + ", \\\n  ".join(plots))
    g.append("unset multiplot")
    r = subprocess.run(["gnuplot"], input="\n".join(g) + "\n", text=True,
                       capture_output=True)
    return r.stderr if r.returncode else ""


NOMINAL = []


def main():
    raw, out = sys.argv[1], sys.argv[2]
    info = dict(l.rstrip("\n").split(": ", 1) for l in open(os.path.join(raw, "sysinfo.txt"))
                if ": " in l)
    unit = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    for s in info["sizes"].split(","):
        s = s.rstrip("bB")
        NOMINAL.append(int(s[:-1]) * unit[s[-1].lower()] if s[-1].lower() in unit else int(s))
    ns = [int(x) for x in info["ns"].split()]
    colls = info["collectives"].split(",")
    data, roof, tcp, floor = load(raw)
    failures = open(os.path.join(raw, "failures.txt")).read().strip() \
        if os.path.exists(os.path.join(raw, "failures.txt")) else ""

    md = ["# tutti against Open MPI, MPICH and gloo on one host", "",
          "Written by `bench/peers/summarize.py` from `bench/peers/run.sh` (`make bench-peers`); "
          "raw JSON lines in `bench/results/raw/`.", "",
          "## Machine and command", "", "```"]
    md += ["%s: %s" % (k, v) for k, v in info.items()]
    md += ["```", ""]
    full = (int(info.get("rounds", 0)) >= 5 and ns == [2, 4, 8] and
            NOMINAL == [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20])
    if not full:
        md += ["**A reduced run** (fewer than 5 rounds, or not n = 2, 4, 8 at 8 B, 1 KiB, 64 KiB, "
               "1 MiB, 16 MiB, 64 MiB): it shows the pipeline works, it is not the issue's "
               "measurement. `make bench-peers` with no overrides is.", ""]
    md += ["## Method", "",
           "- Every program runs the same sweep: float32, sum; per size one checked call, 5 "
           "warm-up calls, an iteration count calibrated to ~30 ms, then a barrier and the "
           "timed back-to-back calls; time = the slowest rank's mean per call; nccl-tests' "
           "algbw and busbw (1 GB = 1e9 B); size = the whole buffer (all-gather's output, "
           "reduce-scatter's input).",
           "- tutti, Open MPI and MPICH: out-of-place calls. gloo: torch's own form of each call "
           "(in-place all_reduce and broadcast, out-of-place all_gather; `gloo_bench.py "
           "--natural`). torch 1.13's gloo has no reduce_scatter: those cells are empty.",
           "- Each round measures the latency floor (`shm_floor`), runs tutti, Open MPI, MPICH, "
           "gloo one after the other at each n, then "
           "tutti on registered buffers (n = 2, `-R 1`, for the roofline only), tutti over tcp "
           "(n = 2) and raw loopback TCP; cells are medians over rounds, ratios "
           "the medians of per-round ratios.",
           "- tutti's roofline bounds come from `tutti-bench --roofline` in the same runs "
           "(`tutti-bench --help` defines them)."]
    if failures:
        md += ["", "**Runs that failed** (their rows are missing):", "", "```", failures, "```"]
    md += ["", "## Targets (issue 3)", "",
           "| target | measured | result | note |", "|---|---|---|---|"]
    md += targets(data, roof, tcp, floor, ns, colls, NOMINAL)
    md += ["", "## busbw and latency tables"]
    md += tables(data, ns, colls, NOMINAL)
    md += ["", "## tutti's roofline (median over rounds)", "",
           "Buffers: plain (malloc, as the MPIs') or registered (tutti_mem_alloc, `tutti-bench "
           "-R 1`: peers read them in place), n = 2 only.", "",
           "| n | buffers | collective | size | busbw GB/s | bound GB/s | % of bound |",
           "|---|---|---|---|---|---|---|"]
    for n in ns:
        for prog, label in ROOF_PROGS:
            for c in colls:
                for s in NOMINAL:
                    rs = roof.get((prog, n, c, s), {}).values()
                    if rs:
                        b = med(v["bound_gbs"] for v in rs)
                        md.append("| %d | %s | %s | %s | %s | %s | %.0f%% |" % (
                            n, label, COLL_LABEL[c], human(s), fmt(med(v["busbw"] for v in rs)),
                            fmt(b), med(100 * v["busbw"] / v["bound_gbs"] for v in rs
                                        if v["bound_gbs"] > 0)))
    md += ["", "## TCP, n = 2 (all-reduce)", "",
           "| size | tutti tcp busbw | gloo busbw | tutti shm busbw |", "|---|---|---|---|"]
    for s in NOMINAL:
        md.append("| %s | %s | %s | %s |" % (human(s), *(fmt(cell(data, p, 2, "allreduce", s,
                                                                    "busbw_gbs"))
                                                        for p in ("tutti_tcp", "gloo", "tutti"))))
    if tcp:
        md += ["", "Raw loopback TCP (`tcp_loopback`, 512 MiB in 64 KiB writes, median of 3 "
               "per round): median %s GB/s, best %s GB/s." % (
                   fmt(med(v["median_gbs"] for v in tcp.values())),
                   fmt(max(v["best_gbs"] for v in tcp.values())))]
    if floor:
        md += floor_table(data, floor)
    err = plot(data, ns, colls, NOMINAL, out)
    md += ["", "## Plot", "", "![busbw vs size](peers_busbw.png)" if not err else
           "gnuplot failed: " + err.strip()]
    with open(os.path.join(out, "peers.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
