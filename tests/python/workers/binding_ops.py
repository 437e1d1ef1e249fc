"""Every operation of the NumPy/torch binding against a NumPy reference, on every rank.

Usage under tutti-run: binding_ops.py [numpy|torch]. Exits non-zero on the first mismatch.
"""
import sys

import numpy as np

import tutti
from refs import (FLOAT_TYPES, INT_TYPES, OPS, data, pair_count, reduce_ref, v_counts, valid)

KIND = sys.argv[1] if len(sys.argv) > 1 else "numpy"
comm = tutti.init_env()
R, N = comm.rank, comm.size
checked = 0

if KIND == "torch":
    import torch
    TYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"]

    def make(values, dtype):
        return torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))

    def to_np(x):
        return (x.float() if x.dtype in (torch.bfloat16, torch.float16) else x).numpy() \
            .astype(np.float64)

    def view(x, i, j):
        return x[i:j]
else:
    TYPES = INT_TYPES + FLOAT_TYPES

    def make(values, dtype):
        return np.asarray(values, dtype=np.float64).astype(dtype)

    def to_np(x):
        return np.asarray(x, dtype=np.float64)

    def view(x, i, j):
        return x[i:j]


def same(got, want, dtype, what, approx=False):
    global checked
    checked += 1
    g = to_np(got).reshape(-1)
    w = np.asarray(want, dtype=np.float64).reshape(-1)
    # The reference rounded to the buffer's own type: what a correct implementation yields.
    w = to_np(make(w, dtype))
    ok = g.shape == w.shape and (np.allclose(g, w, rtol=1e-2 if dtype in ("float16", "bfloat16")
                                             else 1e-6) if approx else np.array_equal(g, w))
    if not ok:
        raise AssertionError("rank %d/%d %s %s %s: got %s want %s"
                             % (R, N, KIND, dtype, what, g[:16], w[:16]))


def wait(x):
    return x.wait() if isinstance(x, tutti.Request) else x


C = 37  # elements per rank: odd, so nothing lines up by accident
for dtype in TYPES:
    for nb in (False, True):
        p = "i" if nb else ""
        call = lambda name, *a, **k: wait(getattr(comm, p + name)(*a, **k))  # noqa: E731
        for op in OPS:
            if not valid(op, dtype):
                continue
            ins = [data(r, C, op, dtype) for r in range(N)]
            want = reduce_ref(ins, op, dtype)
            approx = op == "avg"
            x = make(ins[R], dtype)
            same(call("allreduce", x, op=op), want, dtype, p + "allreduce " + op, approx)
            y = make(ins[R], dtype)
            call("allreduce", y, y, op=op)  # in place
            same(y, want, dtype, p + "allreduce in place " + op, approx)
            root = N - 1
            out = call("reduce", make(ins[R], dtype), op=op, root=root)
            if R == root:
                same(out, want, dtype, p + "reduce " + op, approx)
            elif out is not None:
                raise AssertionError("reduce returned data off the root")
            big = [data(r, C * N, op, dtype, salt=1) for r in range(N)]
            rs_want = reduce_ref(big, op, dtype)[R * C:(R + 1) * C]
            same(call("reduce_scatter", make(big[R], dtype), op=op), rs_want, dtype,
                 p + "reduce_scatter " + op, approx)
            z = make(big[R], dtype)
            call("reduce_scatter", z, view(z, R * C, (R + 1) * C), op=op)  # in place
            same(view(z, R * C, (R + 1) * C), rs_want, dtype, p + "reduce_scatter in place",
                 approx)
            counts = v_counts(N)
            vin = [data(r, sum(counts), op, dtype, salt=2) for r in range(N)]
            off = sum(counts[:R])
            same(call("reduce_scatterv", make(vin[R], dtype), None, counts, op=op),
                 reduce_ref(vin, op, dtype)[off:off + counts[R]], dtype,
                 p + "reduce_scatterv " + op, approx)

        ins = [data(r, C, "sum", dtype, salt=3) for r in range(N)]
        same(call("allgather", make(ins[R], dtype)), np.concatenate(ins), dtype, p + "allgather")
        g = make(np.zeros(C * N), dtype)
        g[R * C:(R + 1) * C] = make(ins[R], dtype)
        call("allgather", view(g, R * C, (R + 1) * C), g)  # in place
        same(g, np.concatenate(ins), dtype, p + "allgather in place")
        root = 1 % N
        b = make(ins[R], dtype)
        call("broadcast", b, root=root)
        same(b, ins[root], dtype, p + "broadcast")
        b2 = make(np.zeros(C), dtype)
        call("broadcast", make(ins[R], dtype), b2, root=root)
        same(b2, ins[root], dtype, p + "broadcast out of place")
        a2a = [data(r, C * N, "sum", dtype, salt=4) for r in range(N)]
        same(call("alltoall", make(a2a[R], dtype)),
             np.concatenate([a2a[j][R * C:(R + 1) * C] for j in range(N)]), dtype,
             p + "alltoall")
        got = call("gather", make(ins[R], dtype), root=0)
        if R == 0:
            same(got, np.concatenate(ins), dtype, p + "gather")
        sroot = N - 1
        sc = make(np.zeros(C), dtype)
        call("scatter", make(a2a[R], dtype) if R == sroot else None, sc, root=sroot)
        same(sc, a2a[sroot][R * C:(R + 1) * C], dtype, p + "scatter")
        counts = v_counts(N)
        vin = [data(r, counts[r], "sum", dtype, salt=5) for r in range(N)]
        # allgatherv into reversed slots: displs are honoured, not assumed to be prefix sums
        displs = [sum(counts[i + 1:]) for i in range(N)]
        got = call("allgatherv", make(vin[R], dtype), make(np.zeros(sum(counts)), dtype), counts,
                   displs)
        same(got, np.concatenate(vin[::-1]), dtype, p + "allgatherv reversed displs")
        got = call("gatherv", make(vin[R], dtype), None, counts if R == 0 else None, root=0)
        if R == 0:
            same(got, np.concatenate(vin), dtype, p + "gatherv")
        full = data(sroot, sum(counts), "sum", dtype, salt=6)
        rv = make(np.zeros(counts[R]), dtype)
        call("scatterv", make(full, dtype) if R == sroot else None, counts, None, rv, root=sroot)
        off = sum(counts[:R])
        same(rv, full[off:off + counts[R]], dtype, p + "scatterv")
        scounts = [pair_count(R, j) for j in range(N)]
        rcounts = [pair_count(j, R) for j in range(N)]
        sends = {r: data(r, sum(pair_count(r, j) for j in range(N)), "sum", dtype, salt=7)
                 for r in range(N)}
        want = []
        for j in range(N):
            o = sum(pair_count(j, k) for k in range(R))
            want.append(sends[j][o:o + pair_count(j, R)])
        got = call("alltoallv", make(sends[R], dtype), scounts, None,
                   make(np.zeros(sum(rcounts)), dtype), rcounts, None)
        same(got, np.concatenate(want), dtype, p + "alltoallv")
        # point-to-point ring: non-blocking both ways, or a group, so order cannot deadlock
        nxt, prv = (R + 1) % N, (R - 1) % N
        rb = make(np.zeros(C), dtype)
        if nb:
            reqs = [comm.isend(make(ins[R], dtype), nxt), comm.irecv(rb, prv)]
            while not reqs[1].test():
                pass
            reqs[0].wait()
        else:
            with tutti.group():
                comm.send(make(ins[R], dtype), nxt)
                comm.recv(rb, prv)
        same(rb, ins[prv], dtype, p + "send/recv ring")
        comm.barrier() if not nb else comm.ibarrier().wait()

# Groups: several all-reduces travel together; every one must still be right.
ins = [[data(r, 5 + k, "sum", "float32", salt=10 + k) for r in range(N)] for k in range(3)]
outs = []
with tutti.group():
    for k in range(3):
        outs.append(comm.allreduce(make(ins[k][R], "float32")))
for k in range(3):
    same(outs[k], reduce_ref(ins[k], "sum", "float32"), "float32", "grouped allreduce %d" % k)

# split: even and odd ranks, ordered by descending rank (key = -rank); dup: same ranks.
sub = comm.split(R % 2, key=-R)
members = sorted([r for r in range(N) if r % 2 == R % 2], reverse=True)
assert sub.size == len(members) and sub.rank == members.index(R), (sub, members)
got = sub.allgather(make(np.array([R]), "int32"))
same(got, members, "int32", "split allgather order")
sub.destroy()
none = comm.split(tutti.SPLIT_NOCOLOR if R == 0 else 1, key=0)
assert (none is None) == (R == 0)
if none is not None:
    none.close()
with comm.dup() as d:
    same(d.allreduce(make(np.array([R + 1.0]), "float64")), [N * (N + 1) / 2], "float64",
         "dup allreduce")

# premul-sum: every rank scales by 2.5 before summing.
if KIND == "numpy":
    op = comm.create_premul_sum(2.5, np.float32)
    x = [data(r, 9, "sum", "float32", salt=20) for r in range(N)]
    same(comm.allreduce(make(x[R], "float32"), op=op), 2.5 * np.stack(x).sum(0), "float32",
         "premul_sum")
    op.destroy()
else:
    # bytes path: bool tensors have no tutti type, but data movement does not need one
    t = torch.tensor([(R + i) % 2 == 0 for i in range(6)])
    got = comm.allgather(t)
    assert got.dtype == torch.bool and got.tolist() == \
        [[(r + i) % 2 == 0 for i in range(6)] for r in range(N)], got
    checked += 1

comm.close()
print("checked %d results" % checked)
