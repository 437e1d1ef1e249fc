"""The torch backend's gaps of issue 11, against references every rank computes itself:
all_gather_coalesced's layout (output_tensor_lists[rank][i] for input i, an empty tensor
included), send/recv tags and receives from any source (recv, irecv, source_rank), int16 and
bool reductions (bool as NCCL's backend: SUM/MAX or, PRODUCT/MIN and), sparse all_reduce
against the dense sum.

Usage under tutti-run (3 ranks): torch_issue11.py. Prints "ok" at the end, and ends without
destroy_process_group(), which must still exit cleanly.
"""
import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group(backend="tutti")
R, N = dist.get_rank(), dist.get_world_size()
assert N == 3


def expect(got, want, what):
    if not (got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)):
        raise AssertionError("rank %d %s: got %s want %s" % (R, what, got, want))


# ---- all_gather_coalesced: output_tensor_lists[r][i] is rank r's input i ----------------
def data(r, i, shape):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) + 100 * r + 10 * i).reshape(shape)


shapes = [(2, 3), (0,), (4,)]
inputs = [data(R, i, s) for i, s in enumerate(shapes)]
outputs = [[torch.full(s, -1.0) for s in shapes] for _ in range(N)]
dist.all_gather_coalesced(outputs, inputs)
for r in range(N):
    for i, s in enumerate(shapes):
        expect(outputs[r][i], data(r, i, s), "all_gather_coalesced[%d][%d]" % (r, i))

# ---- tags: tag 3 is received before an earlier tag 7 ------------------------------------
t7, u3 = torch.full((5,), 7.0), torch.full((5,), 3.0)
if R == 0:
    dist.send(t7, 1, tag=7)
    dist.send(u3, 1, tag=3)
elif R == 1:
    x = torch.zeros(5)
    dist.recv(x, 0, tag=3)
    expect(x, u3, "recv(tag=3)")
    dist.recv(x, 0, tag=7)
    expect(x, t7, "recv(tag=7)")
dist.barrier()

# ---- recv / irecv from any source; source_rank() -----------------------------------------
if R == 2:
    dist.send(torch.full((4,), 2.0), 1, tag=5)
elif R == 1:
    x = torch.zeros(4)
    src = dist.recv(x, tag=5)
    if src != 2:
        raise AssertionError("recv from any source returned %r, expected 2" % (src,))
    expect(x, torch.full((4,), 2.0), "recv from any source")
dist.barrier()
if R == 0:
    w = dist.isend(torch.full((3,), 9, dtype=torch.int64), 1, tag=6)
    w.wait()
elif R == 1:
    y = torch.zeros(3, dtype=torch.int64)
    w = dist.irecv(y, tag=6)
    w.wait()
    expect(y, torch.full((3,), 9, dtype=torch.int64), "irecv from any source")
    if w.source_rank() != 0:
        raise AssertionError("irecv source_rank() %r, expected 0" % (w.source_rank(),))
dist.barrier()

# ---- int16 and bool reductions -----------------------------------------------------------
def i16(r):
    g = torch.Generator().manual_seed(1000 + r)
    return torch.randint(-300, 300, (37,), generator=g, dtype=torch.int64).to(torch.int16)


ops = [(dist.ReduceOp.SUM, lambda a, b: a + b), (dist.ReduceOp.PRODUCT, lambda a, b: a * b),
       (dist.ReduceOp.MIN, torch.minimum), (dist.ReduceOp.MAX, torch.maximum)]
for op, fn in ops:
    want = i16(0)
    for r in range(1, N):
        want = fn(want, i16(r))  # int16 arithmetic: wraps as tutti's does
    t = i16(R)
    dist.all_reduce(t, op=op)
    expect(t, want, "int16 all_reduce %s" % op)
    t = i16(R)
    dist.reduce(t, 0, op=op)
    if R == 0:
        expect(t, want, "int16 reduce %s" % op)


def bools(r):
    g = torch.Generator().manual_seed(2000 + r)
    return torch.randint(0, 2, (41,), generator=g).bool()


for op, any_of in ((dist.ReduceOp.SUM, True), (dist.ReduceOp.MAX, True),
                   (dist.ReduceOp.PRODUCT, False), (dist.ReduceOp.MIN, False)):
    stack = torch.stack([bools(r) for r in range(N)])
    want = stack.any(0) if any_of else stack.all(0)
    t = bools(R)
    dist.all_reduce(t, op=op)
    expect(t, want, "bool all_reduce %s" % op)
    w = dist.all_reduce(bools(R), op=op, async_op=True)  # the waiter thread's path
    w.wait()
want = torch.stack([bools(r) for r in range(N)]).all(0)
t = torch.stack([bools(R)] * N).reshape(-1).contiguous()
out = torch.zeros(41, dtype=torch.bool)
dist.reduce_scatter_tensor(out, t, op=dist.ReduceOp.PRODUCT) if hasattr(
    dist, "reduce_scatter_tensor") else dist._reduce_scatter_base(out, t, op=dist.ReduceOp.PRODUCT)
expect(out, want, "bool reduce_scatter PRODUCT")

# ---- sparse all_reduce against the dense sum ----------------------------------------------
def sparse(r):
    g = torch.Generator().manual_seed(3000 + r)
    nnz = 3 + r  # different per rank, with indices that collide across ranks
    idx = torch.randint(0, 6, (2, nnz), generator=g)
    val = torch.randn(nnz, 2, generator=g, dtype=torch.float64)
    return torch.sparse_coo_tensor(idx, val, (6, 6, 2))


want = sum(sparse(r).to_dense() for r in range(N))
s = sparse(R)
dist.all_reduce(s)
if not s.is_sparse:
    raise AssertionError("sparse all_reduce did not leave a sparse tensor")
if not torch.allclose(s.to_dense(), want, rtol=0, atol=1e-12):
    raise AssertionError("rank %d sparse all_reduce: %s vs %s" % (R, s.to_dense(), want))

# No dist.destroy_process_group(): exit must be clean without it (test_issue11 checks).
print("ok")
