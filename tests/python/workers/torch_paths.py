"""The tutti backend's ways of running an operation (inline when torch waits at once, inline
for small calls of other callers, through the waiter thread otherwise) and its copy-free list
forms, against values every rank computes for itself.

Usage under tutti-run (3 or more ranks): torch_paths.py. Exits non-zero on the first mismatch.
"""
import torch
import torch.distributed as dist

import tutti
import tutti.torch
from tutti._torch_caller import RETURNS_WORK, UNKNOWN, WAITS, caller_waits

dist.init_process_group(backend="tutti")
R, N = dist.get_rank(), dist.get_world_size()
PG = dist.distributed_c10d._get_default_group()
assert isinstance(PG, tutti.torch.ProcessGroupTutti)
C = 5


def ranks_data(r, c=C, dtype=torch.float32):
    return (torch.arange(c, dtype=torch.float64) + 10 * r + 1).to(dtype)


def expect(got, want, what):
    if not (got.shape == want.shape and torch.equal(got, want)):
        raise AssertionError("rank %d/%d %s: got %s want %s" % (R, N, what, got, want))


gathered = torch.cat([ranks_data(j) for j in range(N)])
chunk_sum = sum(torch.cat([ranks_data(j, C * N)]) for j in range(N)).reshape(N, C)

# all_gather into chunks of one tensor: gathered straight into it
flat = torch.zeros(N * C)
dist.all_gather(list(flat.chunk(N)), ranks_data(R))
expect(flat, gathered, "all_gather into chunks")
# ... in place: the input is this rank's chunk
flat = torch.zeros(N * C)
outs = list(flat.chunk(N))
outs[R].copy_(ranks_data(R))
dist.all_gather(outs, outs[R])
expect(flat, gathered, "all_gather in place")
# ... the input is another rank's chunk: must still be read before it is overwritten
flat = torch.zeros(N * C)
outs = list(flat.chunk(N))
outs[(R + 1) % N].copy_(ranks_data(R))
dist.all_gather(outs, outs[(R + 1) % N])
expect(flat, gathered, "all_gather from a chunk of the output")
# ... chunks in reverse order (not back to back in list order), and a non-contiguous output
flat = torch.zeros(N * C)
rev = list(flat.chunk(N))[::-1]
dist.all_gather(rev, ranks_data(R))
expect(torch.cat(rev), gathered, "all_gather into reversed chunks")
nc = [torch.zeros(C, 2).t()[0] for _ in range(N)]  # stride 2: not contiguous
assert not nc[0].is_contiguous()
dist.all_gather(nc, ranks_data(R))
expect(torch.cat(nc), gathered, "all_gather into non-contiguous tensors")
# types tutti has no name for move as bytes
bools = torch.zeros(N * 3, dtype=torch.bool)
dist.all_gather_into_tensor(bools, torch.tensor([R % 2 == 0, True, False]))
expect(bools, torch.tensor([[j % 2 == 0, True, False] for j in range(N)]).reshape(-1),
       "all_gather_into_tensor of bool")
cplx = torch.zeros(N * 2, dtype=torch.complex64)
dist.all_gather(list(cplx.chunk(N)), torch.tensor([R + 1j, -R - 2j], dtype=torch.complex64))
expect(cplx, torch.tensor([v for j in range(N) for v in (j + 1j, -j - 2j)],
                          dtype=torch.complex64), "all_gather of complex64")
b16 = torch.full((7,), R, dtype=torch.int16)
dist.broadcast(b16, src=N - 1)
expect(b16, torch.full((7,), N - 1, dtype=torch.int16), "broadcast of int16")

# reduce_scatter over chunks of one tensor: no concatenation; in place; overlapping
ins = list(ranks_data(R, C * N).chunk(N))
out = torch.zeros(C)
dist.reduce_scatter(out, ins)
expect(out, chunk_sum[R], "reduce_scatter of chunks")
ins = list(ranks_data(R, C * N).chunk(N))
dist.reduce_scatter(ins[R], ins)
expect(ins[R], chunk_sum[R], "reduce_scatter in place")
ins = list(ranks_data(R, C * N).chunk(N))
other = ins[(R + 1) % N]
dist.reduce_scatter(other, ins)
expect(other, chunk_sum[R], "reduce_scatter into another chunk of the input")

# non-contiguous broadcast, blocking and async
t = (torch.arange(6.0).reshape(2, 3) * (R + 1)).t()
dist.broadcast(t, src=1)
expect(t, (torch.arange(6.0).reshape(2, 3) * 2).t(), "broadcast of a transposed tensor")
t = (torch.arange(6.0).reshape(2, 3) * (R + 1)).t()
dist.broadcast(t, src=1, async_op=True).wait()
expect(t, (torch.arange(6.0).reshape(2, 3) * 2).t(), "async broadcast of a transposed tensor")

# Who waits: torch's blocking calls, its async ones, anything else.
import sys  # noqa: E402


def probe():
    return caller_waits(sys._getframe().f_back)


assert caller_waits(None) is UNKNOWN and probe() is UNKNOWN
c10d_codes = {c.co_name: k for c, k in tutti._torch_caller._CODES.items()}
assert c10d_codes["all_reduce"] == "flag" and c10d_codes["send"] is WAITS \
    and c10d_codes["isend"] is RETURNS_WORK, c10d_codes

# torch's blocking calls run inline whatever their size; async_op=True goes to the waiter
big = torch.full((PG.inline_max_bytes // 4 + 1,), float(R + 1))
before = PG._waiter._submitted
dist.all_reduce(big)
dist.all_gather_into_tensor(torch.empty(N * 4), torch.ones(4))
assert PG._waiter._submitted == before, "a blocking call went through the waiter thread"
dist.all_reduce(torch.ones(2), async_op=True).wait()
assert PG._waiter._submitted == before + 1, "an async_op=True call ran inline"
expect(big, torch.full_like(big, float(N * (N + 1) // 2)), "blocking large all_reduce")

# An error of an inline blocking call keeps tutti's exception type
try:
    dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND)
except tutti.InvalidArgumentError as e:
    assert "band" in str(e), str(e)
else:
    raise AssertionError("bitwise AND of floats was accepted")

# Called directly (not through torch.distributed): small runs inline, done on return, raising
# its error at once; large goes through the waiter thread.
opts = dist.AllreduceOptions()
small = torch.full((4,), float(R + 1))
w = PG.allreduce([small], opts)
assert w.is_completed(), "a small direct call should have run inline"
w.wait()
expect(small, torch.full((4,), float(N * (N + 1) // 2)), "direct small allreduce")
bad = dist.AllreduceOptions()
bad.reduceOp = dist.ReduceOp.BAND
try:
    PG.allreduce([torch.ones(2)], bad)
except tutti.InvalidArgumentError as e:
    assert "band" in str(e), str(e)
else:
    raise AssertionError("bitwise AND of floats was accepted (direct call)")
big = torch.full((PG.inline_max_bytes // 4 + 1,), float(R + 1))
before = PG._waiter._submitted
w = PG.allreduce([big], opts)
assert PG._waiter._submitted == before + 1, "a large direct call ran inline"
w.wait()
expect(big, torch.full_like(big, float(N * (N + 1) // 2)), "direct large allreduce")
fut = PG.allreduce([torch.full((3,), 1.0)], opts).get_future()
expect(fut.wait()[0], torch.full((3,), float(N)), "future of a direct allreduce")

# Inline calls behind work in flight: an async all_reduce, then blocking and direct calls
inflight = torch.full((1 << 18,), float(R))
w = dist.all_reduce(inflight, async_op=True)
b = torch.full((3,), float(R))
dist.broadcast(b, src=2 % N)
d = torch.ones(3)
wd = PG.allreduce([d], opts)  # direct, small, but something is in flight: not inline
w.wait()
wd.wait()
expect(inflight, torch.full_like(inflight, float(N * (N - 1) // 2)), "async all_reduce")
expect(b, torch.full((3,), float(2 % N)), "broadcast behind an async all_reduce")
expect(d, torch.full((3,), float(N)), "direct allreduce behind an async all_reduce")

# A receive posted first, then a blocking send each way round the ring: the send runs inline
# while the receive is in flight, and must not wait for it
nxt, prv = (R + 1) % N, (R - 1) % N
rb = torch.zeros(5)
rw = dist.irecv(rb, prv)
dist.send(torch.full((5,), float(R)), nxt)
rw.wait()
expect(rb, torch.full((5,), float(prv)), "irecv then blocking send")
dist.barrier()
PG.barrier().wait()

# An asynchronous operation that fails after it started: rank 0 starts an all_reduce nobody
# joins, then aborts. The Work's future raises tutti's error (torch 1.13's Work.wait() itself
# never raises a future's error) and is_success() says so.
GLOO = dist.new_group(backend="gloo")
if R == 0:
    w = dist.all_reduce(torch.ones(3), async_op=True)
    PG.comm.abort()
    try:
        w.get_future().wait()
    except RuntimeError as e:
        assert "abort" in str(e).lower(), str(e)
    else:
        raise AssertionError("an aborted all_reduce completed")
    assert w.is_completed() and not w.is_success()
dist.barrier(group=GLOO)
print("ok")
