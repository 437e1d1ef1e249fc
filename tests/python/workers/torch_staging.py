"""The tutti backend's registered staging (list forms of all_gather and reduce_scatter go
through one tutti_mem_alloc buffer from the group's pool), against values every rank computes
for itself: sizes around the single-copy chunk (TUTTI_CHUNK_SIZE, set by the test) and odd
ones, growing and shrinking so pooled buffers are reused, blocking and async_op=True, and
outputs that must not change when a later call reuses the staging buffer. Also
Communicator.mem_empty as the buffers of plain calls.

Usage under tutti-run: torch_staging.py CHUNK_ELEMS. Prints "ok" last; exits non-zero on the
first mismatch.
"""
import sys

import numpy as np
import torch
import torch.distributed as dist

import tutti.torch

dist.init_process_group(backend="tutti")
R, N = dist.get_rank(), dist.get_world_size()
PG = dist.distributed_c10d._get_default_group()
CHUNK = int(sys.argv[1])


def data(r, c, salt, dtype):
    # Small integers, exact in every dtype used and in their sums.
    return ((torch.arange(c, dtype=torch.int64) * 7 + 13 * r + salt) % 97).to(dtype)


def expect(got, want, what):
    if not (got.shape == want.shape and torch.equal(got, want)):
        bad = (got != want).nonzero()
        raise AssertionError("rank %d/%d %s: %d elements differ, first at %s (got %s want %s)"
                             % (R, N, what, bad.shape[0], bad[:1].tolist(),
                                got.reshape(-1)[bad[0, 0]].item() if got.dim() == 1 else "?",
                                want.reshape(-1)[bad[0, 0]].item() if want.dim() == 1 else "?"))


sizes = [1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, 1023, 2 * CHUNK + 1, 17]
dtypes = [torch.float32, torch.int32, torch.bfloat16, torch.float64]
kept = []  # outputs of earlier calls, checked again at the end
for i, c in enumerate(sizes):
    dt = dtypes[i % len(dtypes)]
    async_op = i % 2 == 1
    # all_gather into separate tensors (not one buffer): staged
    outs = [torch.full((c,), -1, dtype=dt) for _ in range(N)]
    w = dist.all_gather(outs, data(R, c, i, dt), async_op=async_op)
    if async_op:
        w.wait()
    for j in range(N):
        expect(outs[j], data(j, c, i, dt), "all_gather %d elements %s from rank %d" % (c, dt, j))
    kept.append((outs, [data(j, c, i, dt) for j in range(N)], "all_gather %d" % c))
    # reduce_scatter from separate tensors: staged (concatenated into the registered buffer)
    ins = [data(R, c, i + 10 * j, dt) for j in range(N)]
    out = torch.full((c,), -1, dtype=dt)
    w = dist.reduce_scatter(out, ins, async_op=async_op)
    if async_op:
        w.wait()
    want = sum(data(k, c, i + 10 * R, torch.float64) for k in range(N)).to(dt)
    expect(out, want, "reduce_scatter %d elements %s" % (c, dt))
    kept.append(([out], [want], "reduce_scatter %d" % c))
    # The staging went back to the pool (the bounded pool keeps the largest).
    if not PG._staging._idle:
        raise AssertionError("rank %d: no staging buffer back in the pool after %d elements"
                             % (R, c))

for outs, wants, what in kept:
    for o, w in zip(outs, wants):
        expect(o, w, what + " (after later calls reused the staging)")

# Communicator.mem_empty: registered buffers of plain calls, NumPy and torch.
comm = PG.comm
for c in (CHUNK + 3, 9):
    a = comm.mem_empty((N, c), np.int64)
    comm.allgather(np.arange(c, dtype=np.int64) + 1000 * R, a)
    for j in range(N):
        if not np.array_equal(a[j], np.arange(c, dtype=np.int64) + 1000 * j):
            raise AssertionError("rank %d: mem_empty all-gather row %d wrong" % (R, j))
    t = comm.mem_empty((c,), torch.float32)
    t.copy_(torch.arange(c, dtype=torch.float32) + R)
    comm.allreduce(t, t)
    if not torch.equal(t, N * torch.arange(c, dtype=torch.float32) + sum(range(N))):
        raise AssertionError("rank %d: mem_empty all-reduce wrong" % R)
dist.barrier()
dist.destroy_process_group()
print("ok")
