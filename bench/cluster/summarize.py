#!/usr/bin/python3
"""summarize.py RAW OUT: cluster.md and cluster_busbw.png from bench/cluster/run.sh's raw files.

RAW holds r<round>_<rate>_<placement>_<program>.jsonl (the harnesses' --json lines; the
placement as kind-shape, e.g. block-3x2), r<round>_<rate>_link.jsonl (link_check.py) and
sysinfo.txt. Every cell is a median over rounds; every ratio is the median of the per-round
ratios (against the peers of the same round, which ran next to it).
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

PEERS = ["gloo", "ompi", "ompi_yield"]
LABEL = {"gloo": "gloo", "ompi": "Open MPI", "ompi_yield": "Open MPI yield"}
COLL_LABEL = {"allreduce": "all-reduce", "allgather": "all-gather",
              "reduce_scatter": "reduce-scatter", "broadcast": "broadcast"}
LAT_SIZE = 8  # the latency cell; the others are busbw cells


def label(prog):
    return LABEL.get(prog, prog.replace("tutti_", "tutti "))


def human(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d %s" % (size >> shift, unit)
    return "%d B" % size


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().rstrip("bB")
    return int(s[:-1]) * mult[s[-1].lower()] if s[-1].lower() in mult else int(s)


def rate_gbs(rate):
    """tc's rate word (1gbit, 500mbit) in GB/s (1e9 B/s)."""
    m = re.match(r"(\d+)(g|m)bit$", rate)
    return int(m.group(1)) * (1e9 if m.group(2) == "g" else 1e6) / 8 / 1e9


def hosts_of(place):
    """Ranks per host of a placement word (block-3x2, cyclic-2+1+3)."""
    shape = place.split("-", 1)[1]
    if "x" in shape:
        h, r = shape.split("x")
        return [int(r)] * int(h)
    return [int(x) for x in shape.split("+")]


def bound(coll, place, link):
    """The host-link bound on busbw (GB/s): see the derivation written into cluster.md."""
    per = hosts_of(place)
    n, lmin = sum(per), min(per)
    if coll == "broadcast" or len(per) < 2:
        return link
    return link * (n - 1) / (n - lmin)


def load(raw, sizes):
    """data[(rate, place, prog, coll, size)][round] = the row's best variant; link[rate][round]."""
    data, link = {}, {}
    for path in sorted(glob.glob(os.path.join(raw, "r*_*.jsonl"))):
        base = os.path.basename(path)
        m = re.match(r"r(\d+)_([0-9]+[gm]bit)_link\.jsonl$", base)
        if m:
            for line in open(path):
                if line.startswith("{"):
                    link.setdefault(m.group(2), {})[int(m.group(1))] = \
                        json.loads(line)["link_check"]["gbs"]
            continue
        m = re.match(r"r(\d+)_([0-9]+[gm]bit)_([a-z]+-[0-9x+]+)_(.+)\.jsonl$", base)
        if not m:
            continue
        rnd, rate, place, prog = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        for line in open(path):
            o = json.loads(line)
            variants = [o[k] for k in ("out_of_place", "in_place") if k in o]
            if not variants:
                continue
            best = max(variants, key=lambda v: v["busbw_gbs"])
            n = o["nranks"]
            size = next((s for s in sizes
                         if s == o["size"] or max(1, s // 4 // n) * 4 * n == o["size"]),
                        o["size"])
            data.setdefault((rate, place, prog, o["collective"], size), {})[rnd] = best
    return data, link


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cell(data, key, field):
    return med(v[field] for v in data.get(key, {}).values())


def ratio_vs_peers(data, rate, place, prog, coll, size, field, peers):
    """Median over rounds of prog / the best peer of that round (busbw: higher is better,
    time_us: lower is better, so the ratio is the best peer's time over prog's)."""
    t = data.get((rate, place, prog, coll, size), {})
    rs = []
    for rnd, tv in t.items():
        pv = [data[(rate, place, p, coll, size)][rnd][field] for p in peers
              if rnd in data.get((rate, place, p, coll, size), {})]
        if not pv or not tv[field]:
            continue
        rs.append(tv[field] / max(pv) if field == "busbw_gbs" else min(pv) / tv[field])
    return med(rs)


def fmt(x, digits=3):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return "%.0f" % x
    return ("%%.%dg" % digits) % x


def pct(x):
    return "-" if x is None else "%.0f%%" % (100 * x)


def tables(data, link, rates, places, progs, colls, sizes):
    md = []
    tutti = [p for p in progs if p.startswith("tutti_")]
    peers = [p for p in progs if p in PEERS]
    for rate in rates:
        B = rate_gbs(rate)
        lk = med(link.get(rate, {}).values())
        for place in places:
            md += ["", "### %s, %s" % (rate.replace("gbit", " Gbit/s").replace("mbit", " Mbit/s"),
                                       place.replace("-", " ")), "",
                   "Link %s GB/s nominal; one raw TCP stream measured %s GB/s (link_check). "
                   "busbw in GB/s (median over rounds), %% of the host-link bound in "
                   "parentheses; at 8 B the time per call in µs. *vs peers*: the best tutti "
                   "variant over the best peer of the same round (busbw ratio; at 8 B the best "
                   "peer's time over tutti's)." % (fmt(B), fmt(lk)), ""]
            head = ["collective", "size", "bound"] + [label(p) for p in progs] + ["vs peers"]
            md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for coll in colls:
                bnd = bound(coll, place, B)
                for size in sizes:
                    row = [COLL_LABEL.get(coll, coll), human(size)]
                    lat = size == LAT_SIZE
                    row.append("-" if lat else fmt(bnd))
                    for p in progs:
                        key = (rate, place, p, coll, size)
                        if lat:
                            row.append(fmt(cell(data, key, "time_us")))
                        else:
                            bw = cell(data, key, "busbw_gbs")
                            row.append("-" if bw is None else
                                       "%s (%s)" % (fmt(bw), pct(bw / bnd)))
                    field = "time_us" if lat else "busbw_gbs"
                    best = [ratio_vs_peers(data, rate, place, t, coll, size, field, peers)
                            for t in tutti]
                    best = [b for b in best if b is not None]
                    row.append("%.2f×" % max(best) if best else "-")
                    md.append("| " + " | ".join(row) + " |")
    return md


class Targets:
    def __init__(self):
        self.rows = []

    def add(self, name, value, ok):
        self.rows.append((name, value, "yes" if ok else ("**no**" if ok is not None else "-")))


def targets(data, rates, places, colls, sizes, ref="tutti_auto"):
    """The issue's targets, for the program ref (tutti's default, auto)."""
    t = Targets()
    peers = PEERS
    if "1gbit" in rates and "block-3x2" in places:
        B = rate_gbs("1gbit")
        for coll in ("allreduce", "allgather", "reduce_scatter"):
            for size in (1 << 20, 16 << 20):
                bw = cell(data, ("1gbit", "block-3x2", ref, coll, size), "busbw_gbs")
                f = None if bw is None else bw / bound(coll, "block-3x2", B)
                t.add("3×2, 1 Gbit/s, %s %s: ≥ 90%% of the host-link bound" %
                      (COLL_LABEL[coll], human(size)), pct(f), None if f is None else f >= 0.9)
        for size in (1 << 20, 16 << 20):
            bw = cell(data, ("1gbit", "block-3x2", ref, "broadcast", size), "busbw_gbs")
            f = None if bw is None else bw / B
            t.add("3×2, 1 Gbit/s, broadcast %s: ≥ 90%% of the link" % human(size), pct(f),
                  None if f is None else f >= 0.9)
        worst, at64 = None, None
        for coll in colls:
            for size in sizes:
                if size == LAT_SIZE:
                    continue
                r = ratio_vs_peers(data, "1gbit", "block-3x2", ref, coll, size, "busbw_gbs",
                                   peers)
                if r is not None and (worst is None or r < worst[0]):
                    worst = (r, coll, size)
                if size == 64 << 10 and r is not None and (at64 is None or r < at64[0]):
                    at64 = (r, coll, size)
        t.add("3×2, 1 Gbit/s: ≥ 1.0× the best of gloo and Open MPI in every cell (worst)",
              "-" if worst is None else "%.2f× (%s %s)" % (worst[0], COLL_LABEL[worst[1]],
                                                          human(worst[2])),
              None if worst is None else worst[0] >= 1.0)
        t.add("3×2, 1 Gbit/s: ≥ 3× the best peer at 64 KiB (worst)",
              "-" if at64 is None else "%.2f× (%s)" % (at64[0], COLL_LABEL[at64[1]]),
              None if at64 is None else at64[0] >= 3.0)
    if "block-3x2" in places and "cyclic-3x2" in places:
        for rate in rates:
            worst = None
            for coll in colls:
                for size in sizes:
                    if size == LAT_SIZE:
                        continue
                    b = cell(data, (rate, "block-3x2", ref, coll, size), "busbw_gbs")
                    c = cell(data, (rate, "cyclic-3x2", ref, coll, size), "busbw_gbs")
                    if b and c is not None and (worst is None or c / b < worst[0]):
                        worst = (c / b, coll, size)
            t.add("%s: cyclic 3×2 ≥ 0.9× block (worst cell)" % rate,
                  "-" if worst is None else "%.2f× (%s %s)" % (worst[0], COLL_LABEL[worst[1]],
                                                              human(worst[2])),
                  None if worst is None else worst[0] >= 0.9)
    if "10gbit" in rates:
        B = rate_gbs("10gbit")
        for place in places:
            for coll in colls:
                bw = cell(data, ("10gbit", place, ref, coll, 16 << 20), "busbw_gbs")
                f = None if bw is None else bw / bound(coll, place, B)
                t.add("10 Gbit/s, %s, %s 16 MiB: ≥ 80%% of the bound" %
                      (place.replace("-", " "), COLL_LABEL[coll]), pct(f),
                      None if f is None else f >= 0.8)
    for rate in rates:
        for place in places:
            key = lambda p: (rate, place, p, "allreduce", LAT_SIZE)
            tt = cell(data, key(ref), "time_us")
            pt = [cell(data, key(p), "time_us") for p in peers]
            pt = [x for x in pt if x is not None]
            if tt is None or not pt:
                continue
            r = ratio_vs_peers(data, rate, place, ref, "allreduce", LAT_SIZE, "time_us", peers)
            t.add("%s %s, 8 B all-reduce: tutti ≤ 0.7× the best peer's time" %
                  (rate, place.replace("-", " ")),
                  "tutti %s µs, %s; tutti/best %.2f" % (
                      fmt(tt), ", ".join("%s %s µs" % (label(p), fmt(cell(data, key(p),
                                                                             "time_us")))
                                         for p in peers if cell(data, key(p), "time_us")),
                      1 / r if r else float("nan")),
                  r is not None and 1 / r <= 0.7)
    md = ["| target | figure | met |", "|---|---|---|"]
    md += ["| %s | %s | %s |" % row for row in t.rows]
    return md


DERIVATION = """## The host-link bound

Each host has one link of rate B (tbf on both ends of its veth, so B in each direction); its
ranks share it; traffic between ranks of one host never uses it. n ranks, L_h of them on host h,
L = min L_h. tutti-bench's busbw: algbw = S/t with S the buffer size it reports (all-reduce and
broadcast: the vector; all-gather: the whole output; reduce-scatter: the whole input), times
2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for broadcast.

- **all-gather**: host h ends with every rank's fragment; the fragments of the n - L_h ranks
  elsewhere must come in over its link: at least S (n - L_h)/n bytes, so t ≥ S (n - L)/(n B)
  (the host with the fewest ranks is the bottleneck), algbw ≤ B n/(n - L),
  **busbw ≤ B (n-1)/(n - L)**.
- **reduce-scatter**: the dual. Host h's inputs to the slices of the n - L_h ranks elsewhere are
  S (n - L_h)/n bytes that exist only on h (they can be combined with other hosts' inputs only
  after they left it), so they must go out over its link: the same t, the same **busbw bound**.
- **all-reduce**: with the hosts as the nodes, the classic bound (Patarasuk and Yuan's, for
  any algorithm over a tree of links; an all-reduce is no cheaper than a reduce-scatter followed
  by an all-gather of the host-level vectors) is 2 S (H-1)/H bytes through some host's link in
  each direction: t ≥ 2 S (H-1)/(H B), algbw ≤ B H/(2(H-1)), busbw = 2(n-1)/n · algbw ≤
  **B (n-1)/n · H/(H-1)**, the same number as all-gather's for balanced placements (uneven
  ones: the table uses all-gather's (n-1)/(n - L) form for all three). A flat ring sends
  2 S (n-1)/n over each ring edge, so a host link crossed by one edge each way carries
  2 S (n-1)/n, not 2 S (H-1)/H: at 3×2, 80% of the bound at best; a ring that leaves and
  re-enters a host more than once (cyclic placement) pays that per crossing.
- **broadcast**: every host but the root's must receive S bytes: t ≥ S/B, **busbw ≤ B**.

For balanced placements (H hosts, n/H ranks each) the bound is B (n-1)/n · H/(H-1): 3×2 → 1.25 B
(0.156 GB/s at 1 Gbit/s, 1.56 at 10), 3×1 → B, 2×3 → 1.67 B; placement (block or cyclic) does not
change it. B is the nominal rate: TCP over Ethernet frames of 1500 bytes carries at most
1448/1514 = 95.6% of it as payload, and tbf's timing under load takes some more (the link_check
line of each section is one raw TCP stream's real figure), so 100% of the bound is not
reachable; the issue's targets (90%, 80%) are against the nominal bound.
"""


def plot(data, rates, places, progs, colls, sizes, out, note=""):
    """cluster_busbw.png: busbw against size, one panel per (rate, collective) at the first
    placement, one line per program, the bound dashed. Returns gnuplot's error text or ''."""
    place = places[0]
    bw_sizes = [s for s in sizes if s != LAT_SIZE]
    dat = os.path.join(out, "cluster_busbw.dat")
    blocks, idx = [], {}
    with open(dat, "w") as f:
        for rate in rates:
            for coll in colls:
                for p in progs:
                    pts = [(s, cell(data, (rate, place, p, coll, s), "busbw_gbs"))
                           for s in bw_sizes]
                    pts = [(s, v) for s, v in pts if v]
                    if not pts:
                        continue
                    idx[(rate, coll, p)] = len(blocks)
                    blocks.append(pts)
                    f.write("# %s %s %s\n" % (rate, coll, p))
                    for s, v in pts:
                        f.write("%d %g\n" % (s, v))
                    f.write("\n\n")
    g = ['set terminal pngcairo size 1600,%d font "sans,10"' % (380 * len(rates)),
         'set output "%s"' % os.path.join(out, "cluster_busbw.png"),
         "set multiplot layout %d,%d title \"busbw (GB/s) against size, %s; dashed: the "
         "host-link bound%s\"" % (len(rates), len(colls), place.replace("-", " "),
                                   ("\\n" + note.replace('"', "'")) if note else ""),
         "set logscale x 2", "set xrange [%d:%d]" % (min(bw_sizes) // 2, max(bw_sizes) * 2),
         "set xtics (%s)" % ", ".join('"%s" %d' % (human(x), x) for x in bw_sizes),
         "set key top left font \",8\"",
         "set grid", "set yrange [0:*]"]
    colours = ["#1f77b4", "#17becf", "#9467bd", "#ff7f0e", "#d62728", "#2ca02c", "#8c564b"]
    for rate in rates:
        for coll in colls:
            b = bound(coll, place, rate_gbs(rate))
            g.append('set title "%s, %s"' % (COLL_LABEL.get(coll, coll), rate))
            parts = ["%g with lines dt 2 lc rgb \"black\" title \"bound\"" % b]
            for i, p in enumerate(progs):
                if (rate, coll, p) in idx:
                    parts.append('"%s" index %d with linespoints lw 2 lc rgb "%s" title "%s"' %
                                 (dat, idx[(rate, coll, p)], colours[i % len(colours)],
                                  label(p)))
            g.append("plot " + ", ".join(parts))
    g.append("unset multiplot")
    try:
        r = subprocess.run(["gnuplot"], input="\n".join(g) + "\n", text=True,
                           capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return r.stderr if r.returncode else ""


def main():
    raw, out = sys.argv[1], sys.argv[2]
    info = {}
    for line in open(os.path.join(raw, "sysinfo.txt")):
        k, _, v = line.partition(": ")
        info.setdefault(k.strip(), v.strip())
    sizes = [parse_size(s) for s in info["sizes"].split(",")]
    rates = info["rates"].split()
    places = [p.replace(":", "-") for p in info["placements"].split()]
    progs = info["programs"].split()
    colls = info["collectives"].split(",")
    data, link = load(raw, sizes)

    md = ["# tutti across namespace hosts: bench-cluster", ""]
    if info.get("note"):
        md += ["**%s**" % info["note"], ""]
    md += ["tutti against gloo and Open MPI on 3 network-namespace hosts of one machine "
           "(tests/cluster/cluster.sh): each host its own hostname and one veth into a bridge, "
           "shaped by tbf on both ends. Written by bench/cluster/summarize.py from "
           "`make bench-cluster` (bench/cluster/run.sh); raw JSON in cluster_raw/.", "",
           "```"] + [line.rstrip() for line in open(os.path.join(raw, "sysinfo.txt"))] + \
         ["```", ""]
    failures = os.path.join(raw, "failures.txt")
    if os.path.exists(failures):
        md += ["Failed runs (their cells are missing):", "", "```"] + \
              [line.rstrip() for line in open(failures)] + ["```", ""]
    md += ["## Targets (issue 14), tutti auto", ""]
    md += targets(data, rates, places, colls, sizes)
    md += ["", "## Every cell"]
    md += tables(data, link, rates, places, progs, colls, sizes)
    md += ["", DERIVATION]
    err = plot(data, rates, places, progs, colls, sizes, out, info.get("note", ""))
    md += ["## Plot", "", "![busbw vs size](cluster_busbw.png)" if not err else
           "gnuplot failed: " + err.strip()]
    with open(os.path.join(out, "cluster.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
