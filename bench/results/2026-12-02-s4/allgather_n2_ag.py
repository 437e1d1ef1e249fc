#!/usr/bin/env python3
"""Alternating rounds: tutti builds/variants and both MPIs, all-gather n=2, out of place.
Prints per size: median time, busbw, %bound (tutti), ratio busbw / best MPI (median of per-round)."""
import json, os, statistics, subprocess, sys
R = int(os.environ.get("ROUNDS", "5")); SIZES = os.environ.get("SIZES", "16M,64M")
COLL = os.environ.get("COLL", "allgather"); N = os.environ.get("N", "2")
env0 = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
def tutti(build, **e):
    return ([f"{build}/bin/tutti-run", "-n", N, f"{build}/bin/tutti-bench", COLL, "--sizes", SIZES,
             "--outofplace", "--json", "-c", "1", "--roofline"], dict(env0, TUTTI_TRANSPORT="shm", **e))
V = [("before_auto", *tutti("/tmp/ag/base/build")),
     ("after_auto", *tutti("build")),
     ("before_rd", *tutti("/tmp/ag/base/build", TUTTI_ALGO="recursive_doubling")),
     ("after_rd", *tutti("build", TUTTI_ALGO="recursive_doubling")),
     ("after_ring", *tutti("build", TUTTI_ALGO="ring")),
     ("after_cma", *tutti("build", TUTTI_ALGO="cma")),
     ("ompi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", N, "/tmp/ag/mpi_ompi",
               COLL, "--sizes", SIZES, "--json", "--outofplace"], env0),
     ("mpich", ["mpiexec.mpich", "-n", N, "/tmp/ag/mpi_mpich", COLL, "--sizes", SIZES, "--json",
                "--outofplace"], env0)]
only = os.environ.get("ONLY")
if only: V = [v for v in V if v[0] in only.split(",") or v[0] in ("ompi", "mpich")]
bus = {}; pct = {}; load = []
for r in range(R):
    load.append(os.getloadavg()[0])
    for name, cmd, env in V:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if p.returncode: sys.exit(f"{name}: {p.stdout}{p.stderr}")
        for line in p.stdout.splitlines():
            if line.startswith("["): line = line.split("] ", 1)[1]
            if not line.startswith("{"): continue
            o = json.loads(line); s = o["size"]; oop = o["out_of_place"]
            bus.setdefault(name, {}).setdefault(s, []).append(oop["busbw_gbs"])
            if "pct_of_bound" in oop: pct.setdefault(name, {}).setdefault(s, []).append(oop["pct_of_bound"])
print(f"rounds {R}, load average at round starts: {' '.join(f'{l:.2f}' for l in load)}")
for s in sorted(bus["ompi"]):
    best = [max(a, b) for a, b in zip(bus["ompi"][s], bus["mpich"][s])]
    print(f"size {s}: ompi {statistics.median(bus['ompi'][s]):.3f} mpich {statistics.median(bus['mpich'][s]):.3f} GB/s busbw")
    for name, _, _ in V:
        if name in ("ompi", "mpich"): continue
        b = bus[name][s]
        ratio = statistics.median([x / y for x, y in zip(b, best)])
        print(f"  {name:12s} busbw {statistics.median(b):.3f} GB/s  %bound {statistics.median(pct[name][s]):5.1f}  "
              f"vs best MPI {ratio:.2f}x (median of per-round ratios)  per-round %bound {pct[name][s]}")
print(json.dumps({"busbw": bus, "pct": pct}))
