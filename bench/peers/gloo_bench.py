#!/usr/bin/python3
"""gloo_bench: the tutti-bench sweep over torch.distributed's gloo backend.

    /usr/bin/python3 gloo_bench.py -N NRANKS [all|allreduce,allgather,broadcast] [-b 8] [-e 64M]
        [-f 2] [--sizes S1,S2,...] [-n ITERS|auto] [-w 5] [-c 0|1] [--inplace|--outofplace] [--faults] [--json]
        [--port P]

`--nranks N` (or `-N`) starts N worker processes of this script with the env:// variables
(MASTER_ADDR=127.0.0.1, MASTER_PORT, RANK, WORLD_SIZE) and OMP_NUM_THREADS=1, as torchrun
would; a process started with RANK already set is a worker. Timing is tutti-bench's: per size
and variant one checked call, WARMUP untimed calls, the iteration count calibrated the same way,
then a barrier and ITERS back-to-back calls; the time per call is the slowest rank's. Columns
and --json lines are tutti-bench's. float32, sum.

What each variant calls (torch 1.13 gloo has no reduce_scatter and no tensor all-gather, so
reduce_scatter is left out, not emulated):
  allreduce   out of place: recv.copy_(send); all_reduce(recv)   in place: all_reduce(recv)
  allgather   out of place: all_gather(views of recv, send)       in place: the same with the
                                                                  input the rank's own view
  broadcast   out of place: root recv.copy_(send); broadcast(recv) in place: broadcast(recv)
--natural times only torch's own form of each (the in-place all_reduce and broadcast, the
out-of-place all_gather): half the time, which matters since gloo is by far the slowest.
"""
import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time

TARGET_S, PROBE_S, MAX_ITERS = 0.03, 0.002, 100000  # tutti-bench's -n auto
COLLS = ["allreduce", "allgather", "broadcast"]
BUS_STEPS = {"allreduce": 2, "allgather": 1, "broadcast": 0}
PER_RANK = {"allreduce": False, "allgather": True, "broadcast": False}
UNSUPPORTED = {"reduce_scatter"}
NATURAL_INPLACE = {"allreduce": True, "allgather": False, "broadcast": True}


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.rstrip("bB")
    if s and s[-1].lower() in mult:
        return int(s[:-1]) * mult[s[-1].lower()]
    return int(s)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("colls", nargs="?", default="allreduce")
    p.add_argument("-N", "--nranks", type=int, default=0)
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("-f", type=int, default=2)
    p.add_argument("--sizes", default="")
    p.add_argument("-n", default="auto")
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-c", type=int, default=1)
    p.add_argument("--inplace", action="store_true")
    p.add_argument("--outofplace", action="store_true")
    p.add_argument("--natural", action="store_true",
                   help="per collective only torch's own form: all_reduce and broadcast in "
                        "place, all_gather out of place")
    p.add_argument("--faults", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args(argv)
    names = []
    for c in a.colls.split(","):
        names += COLLS + sorted(UNSUPPORTED) if c == "all" else [c]
    bad = [c for c in names if c not in COLLS and c not in UNSUPPORTED]
    if bad or a.f < 2 or a.b < 1 or a.b > a.e or (a.inplace and a.outofplace):
        p.error("bad collective, sizes or variants: %s" % (bad or ""))
    a.colls = names
    a.sizes = [parse_size(x) for x in a.sizes.split(",") if x]
    if a.sizes:
        a.b, a.e = a.sizes[0], a.sizes[-1]
    a.iters = 0 if a.n == "auto" else int(a.n)
    return a


def launch(a, argv):
    """Starts the workers as torchrun would; returns the worst exit status."""
    port = a.port
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    procs = []
    for r in range(a.nranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                   LOCAL_RANK=str(r), WORLD_SIZE=str(a.nranks), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv,
                                      env=env))
    return max(p.wait() for p in procs)


class Bench:
    def __init__(self, a, torch, dist):
        self.a, self.torch, self.dist = a, torch, dist
        self.rank, self.n = dist.get_rank(), dist.get_world_size()
        elems = max(a.e // 4, self.n)
        self.send = torch.zeros(elems, dtype=torch.float32)
        self.recv = torch.zeros(elems, dtype=torch.float32)

    def call(self, coll, count, inplace):
        d, send, recv = self.dist, self.send, self.recv
        if coll == "allreduce":
            r = recv[:count]
            if not inplace:
                r.copy_(send[:count])
            d.all_reduce(r)
        elif coll == "allgather":
            views = list(recv[:count * self.n].split(count))
            d.all_gather(views, views[self.rank] if inplace else send[:count])
        elif coll == "broadcast":
            r = recv[:count]
            if not inplace and self.rank == 0:
                r.copy_(send[:count])
            d.broadcast(r, 0)

    def check(self, coll, count, inplace):
        torch, n = self.torch, self.n
        idx = torch.arange(count, dtype=torch.int32)
        # tutti-bench's inputs: (rank*5 + j*3) % 7 at element j
        inp = lambda r, j: ((r * 5 + j * 3) % 7).to(torch.float32)
        self.recv[:count * n].fill_(float("nan"))
        j = idx
        if coll == "allgather" and inplace:
            self.recv[self.rank * count:(self.rank + 1) * count] = inp(self.rank, j)
        elif inplace:
            self.recv[:count] = inp(self.rank, j)
        else:
            self.send[:count] = inp(self.rank, j)
        self.call(coll, count, inplace)
        if coll == "allgather":
            want = torch.cat([inp(r, j) for r in range(n)])
            got = self.recv[:count * n]
        else:
            want = inp(0, j) if coll == "broadcast" else sum(inp(r, j) for r in range(n))
            got = self.recv[:count]
        return float((got != want).sum())

    def timed(self, coll, count, inplace, k):
        self.dist.barrier()
        f0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
        for _ in range(k):
            self.call(coll, count, inplace)
        t = time.perf_counter() - t0
        f = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / k
        m = self.torch.tensor([t, f], dtype=self.torch.float64)
        self.dist.all_reduce(m, op=self.dist.ReduceOp.MAX)
        return float(m[0]), float(m[1])

    def variant(self, coll, count, size, inplace):
        a = self.a
        wrong = -1.0
        if a.c:
            w = self.torch.tensor([self.check(coll, count, inplace)], dtype=self.torch.float64)
            self.dist.all_reduce(w)
            wrong = float(w[0])
        for _ in range(a.w):
            self.call(coll, count, inplace)
        iters = a.iters
        if not iters:
            # tutti-bench's probe: the faster of two batches of the same calls
            def probe(k):
                return min(self.timed(coll, count, inplace, k)[0] for _ in range(2))
            k, t = 1, probe(1)
            while t < PROBE_S and k < MAX_ITERS:
                k = min(k * 10, MAX_ITERS)
                t = probe(k)
            iters = int(max(1, min(MAX_ITERS, TARGET_S / (t / k) + 0.5)))
        t, flt = self.timed(coll, count, inplace, iters)
        us = t / iters * 1e6
        algbw = size / us * 1e-3
        steps = BUS_STEPS[coll]
        busbw = algbw * (steps * (self.n - 1) / self.n if steps else 1.0)
        return {"time_us": round(us, 4), "algbw_gbs": float("%.6g" % algbw),
                "busbw_gbs": float("%.6g" % busbw), "wrong": None if wrong < 0 else wrong,
                "minflt_per_op": round(flt, 3), "iters": iters}

    def sweep(self, coll):
        a, n = self.a, self.n
        variants = [v for v, on in ((False, not a.inplace), (True, not a.outofplace)) if on]
        if a.natural:
            variants = [NATURAL_INPLACE.get(coll, False)]
        if self.rank == 0 and not a.json:
            groups = "".join("  %10s %8s %8s %6s%s" % ("time", "algbw", "busbw", "#wrong",
                                                       "   minflt" if a.faults else "")
                             for _ in variants)
            which = " and ".join("in place" if v else "out of place" for v in variants)
            print("#\n# %s, %s\n#%11s %13s %9s %6s %6s%s" % (coll, which, "size", "count", "type",
                                                            "redop", "root", groups))
        if coll in UNSUPPORTED:
            if self.rank == 0 and not a.json:
                print("# %s: not in torch %s gloo" % (coll, self.torch.__version__))
            return 0.0
        wrong, prev, s = 0.0, 0, a.b
        while s:
            count = max(1, s // 4 // (n if PER_RANK[coll] else 1))
            size = count * 4 * (n if PER_RANK[coll] else 1)
            if size != prev:
                prev = size
                res = {v: self.variant(coll, count, size, v) for v in variants}
                wrong += sum(r["wrong"] or 0 for r in res.values())
                if self.rank == 0:
                    self.row(coll, size, res)
            if a.sizes:
                i = a.sizes.index(s) + 1
                s = a.sizes[i] if i < len(a.sizes) else 0
            else:
                s = 0 if s > a.e // a.f else s * a.f
        return wrong

    def row(self, coll, size, res):
        op = "sum" if coll == "allreduce" else "none"
        root = 0 if coll == "broadcast" else -1
        if self.a.json:
            o = {"collective": coll, "nranks": self.n, "transport": "gloo", "size": size,
                 "count": size // 4, "type": "float32", "redop": op, "root": root}
            for v, r in res.items():
                o["in_place" if v else "out_of_place"] = r
            print(json.dumps(o, separators=(",", ":")), flush=True)
            return
        line = "%12d %13d %9s %6s %6d" % (size, size // 4, "float32", op, root)
        for r in res.values():
            line += "  %10.2f %8.3f %8.3f %6s" % (r["time_us"], r["algbw_gbs"], r["busbw_gbs"],
                                                 "N/A" if r["wrong"] is None
                                                 else "%.0f" % r["wrong"])
            if self.a.faults:
                line += " %8.2f" % r["minflt_per_op"]
        print(line, flush=True)


def main():
    argv = sys.argv[1:]
    a = parse_args(argv)
    if "RANK" not in os.environ:
        if a.nranks < 1:
            sys.exit("gloo_bench: give -N NRANKS, or start it under torchrun")
        sys.exit(launch(a, argv))
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="env://")
    b = Bench(a, torch, dist)
    if b.rank == 0 and not a.json:
        print("# gloo_bench (torch %s gloo): nranks %d, dtype float32, warmup %d, iters %s"
              % (torch.__version__, b.n, a.w, a.iters or "auto"), flush=True)
    wrong = sum(b.sweep(c) for c in a.colls)
    if b.rank == 0 and a.c:
        print("# check: %s (%.0f wrong elements)" % ("FAILED" if wrong else
                                                      "all results correct", wrong),
              file=sys.stderr if a.json else sys.stdout, flush=True)
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
