"""torch.distributed with backend "tutti" against NumPy references and, wherever gloo has the
operation and dtype, against gloo's answer on the same inputs (a gloo group over the same ranks).

Usage under tutti-run: torch_ops.py. Exits non-zero on the first mismatch.
"""
import numpy as np
import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401
from refs import data, reduce_ref, valid

dist.init_process_group(backend="tutti")
R, N = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "tutti"
GLOO = dist.new_group(backend="gloo")
checked = 0

TORCH_OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
             "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG, "band": dist.ReduceOp.BAND,
             "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR}
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "int8"]
GLOO_REDUCE_TYPES = ("float32", "float64", "int32", "int64")  # gloo rejects bfloat16 etc.


def T(values, dtype):
    return torch.tensor(np.asarray(values, dtype=np.float64)).to(getattr(torch, dtype))


def check(got, want, what, approx=False):
    global checked
    checked += 1
    if isinstance(want, torch.Tensor):
        want = want.double()
    else:
        want = T(want, str(got.dtype).split(".")[1]).double()
    g = got.double()
    ok = g.shape == want.shape and (torch.allclose(g, want, rtol=1e-2) if approx
                                    else torch.equal(g, want))
    if not ok:
        raise AssertionError("rank %d/%d %s: got %s want %s" % (R, N, what, g.flatten()[:12],
                                                                 want.flatten()[:12]))


C = 11
for dtype in DTYPES:
    for name, op in TORCH_OPS.items():
        if not valid(name, dtype):
            continue
        ins = [data(r, C, name, dtype) for r in range(N)]
        want = reduce_ref(ins, name, dtype).reshape(C)
        x = T(ins[R], dtype)
        dist.all_reduce(x, op=op)
        check(x, want, "all_reduce %s %s" % (name, dtype), approx=name == "avg")
        if dtype in GLOO_REDUCE_TYPES and name != "avg":
            y = T(ins[R], dtype)
            dist.all_reduce(y, op=op, group=GLOO)
            check(x, y, "all_reduce %s %s equals gloo" % (name, dtype))
        z = T(ins[R], dtype)
        w = dist.all_reduce(z, op=op, async_op=True)
        w.wait()
        check(z, want, "async all_reduce %s %s" % (name, dtype), approx=name == "avg")
        r = T(ins[R], dtype)
        dist.reduce(r, dst=N - 1, op=op)
        if R == N - 1:
            check(r, want, "reduce %s %s" % (name, dtype), approx=name == "avg")
    # reduce-scatter, both forms (gloo has neither in 1.13)
    big = [data(r, C * N, "sum", dtype, salt=1) for r in range(N)]
    want = reduce_ref(big, "sum", dtype)[R * C:(R + 1) * C]
    out = T(np.zeros(C), dtype)
    dist.reduce_scatter_tensor(out, T(big[R], dtype))
    check(out, want, "reduce_scatter_tensor " + dtype)
    out2 = T(np.zeros(C), dtype)
    dist.reduce_scatter(out2, list(T(big[R], dtype).chunk(N)))
    check(out2, want, "reduce_scatter " + dtype)
    # gathers
    ins = [data(r, C, "sum", dtype, salt=2) for r in range(N)]
    lst = [T(np.zeros(C), dtype) for _ in range(N)]
    dist.all_gather(lst, T(ins[R], dtype))
    for i in range(N):
        check(lst[i], ins[i], "all_gather %s [%d]" % (dtype, i))
    flat = T(np.zeros(C * N), dtype)
    dist.all_gather_into_tensor(flat, T(ins[R], dtype))
    check(flat, np.concatenate(ins), "all_gather_into_tensor " + dtype)
    glist = [T(np.zeros(C), dtype) for _ in range(N)] if R == 0 else None
    dist.gather(T(ins[R], dtype), glist, dst=0)
    if R == 0:
        for i in range(N):
            check(glist[i], ins[i], "gather %s [%d]" % (dtype, i))
    src = N - 1
    slist = [T(ins[src], dtype) + i for i in range(N)] if R == src else None
    so = T(np.zeros(C), dtype)
    dist.scatter(so, slist, src=src)
    check(so, T(ins[src], dtype) + R, "scatter " + dtype)
    b = T(ins[R], dtype)
    dist.broadcast(b, src=1 % N)
    check(b, ins[1 % N], "broadcast " + dtype)
    if dtype in GLOO_REDUCE_TYPES:
        bg = T(ins[R], dtype)
        dist.broadcast(bg, src=1 % N, group=GLOO)
        check(b, bg, "broadcast %s equals gloo" % dtype)

# all_to_all_single: even split, then uneven row splits of a 2-D tensor
rows = 2 * N
x = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * R
o = torch.empty_like(x)
dist.all_to_all_single(o, x)
og = torch.empty_like(x)
dist.all_to_all_single(og, x, group=GLOO)
check(o, og, "all_to_all_single equals gloo")
want = torch.cat([(torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * j)
                  [2 * R:2 * R + 2] for j in range(N)])
check(o, want, "all_to_all_single")


def split(src, dst):
    return (src + dst) % 3  # rows src sends dst, zero included


in_split = [split(R, j) for j in range(N)]
out_split = [split(j, R) for j in range(N)]
x = torch.arange(sum(in_split) * 2, dtype=torch.bfloat16).reshape(-1, 2) + R
o = torch.empty(sum(out_split), 2, dtype=torch.bfloat16)
dist.all_to_all_single(o, x, out_split, in_split)
parts = []
for j in range(N):
    xj = torch.arange(sum(split(j, k) for k in range(N)) * 2, dtype=torch.bfloat16) \
        .reshape(-1, 2) + j
    start = sum(split(j, k) for k in range(R))
    parts.append(xj[start:start + split(j, R)])
check(o, torch.cat(parts), "all_to_all_single with split sizes (bfloat16)")
# all_to_all with tensors of different sizes per peer
ins = [torch.full((j + 1,), float(10 * R + j)) for j in range(N)]
outs = [torch.empty(R + 1) for _ in range(N)]
dist.all_to_all(outs, ins)
for j in range(N):
    check(outs[j], torch.full((R + 1,), float(10 * j + R)), "all_to_all from %d" % j)

# point-to-point: a ring with isend/irecv, then blocking send/recv from rank 0 to the last
nxt, prv = (R + 1) % N, (R - 1) % N
rb = torch.zeros(4)
reqs = [dist.isend(torch.full((4,), float(R)), nxt), dist.irecv(rb, prv)]
for q in reqs:
    q.wait()
check(rb, torch.full((4,), float(prv)), "isend/irecv ring")
if R == 0:
    dist.send(torch.tensor([7.0, 8.0]), N - 1)
elif R == N - 1:
    t = torch.zeros(2)
    dist.recv(t, 0)
    check(t, [7.0, 8.0], "send/recv")

# non-contiguous tensor: torch hands it over as is; the backend must write it back
nc = (torch.arange(12, dtype=torch.float32).reshape(3, 4) * (R + 1)).t()
dist.all_reduce(nc)
check(nc, (torch.arange(12, dtype=torch.float32).reshape(3, 4) * (N * (N + 1) / 2)).t(),
      "all_reduce of a transposed tensor")

# async: several operations in flight at once, then waited in reverse order
ts = [torch.full((1000,), float(R + k)) for k in range(4)]
works = [dist.all_reduce(t, async_op=True) for t in ts]
for w in reversed(works):
    w.wait()
for k, t in enumerate(ts):
    check(t, torch.full((1000,), float(N * (N - 1) / 2 + N * k)), "async in flight %d" % k)
assert all(w.is_completed() for w in works)

# new_group: a subgroup of the first and last ranks; the others are not members
members = sorted({0, N - 1})
g = dist.new_group(members)
t = torch.tensor([float(R + 1)])
if R in members:
    dist.all_reduce(t, group=g)
    check(t, [float(sum(m + 1 for m in members))], "new_group all_reduce")
    lst = [torch.zeros(1) for _ in members]
    dist.all_gather(lst, torch.tensor([float(R)]), group=g)
    check(torch.cat(lst), [float(m) for m in members], "new_group all_gather")
    assert dist.get_rank(g) == members.index(R)
else:
    assert dist.get_rank(g) == -1
dist.barrier()
dist.barrier(group=GLOO)
dist.destroy_process_group()
print("checked %d results" % checked)
