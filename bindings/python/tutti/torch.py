"""torch.distributed backend "tutti": ``import tutti.torch``, then
``dist.init_process_group(backend="tutti")``.

Every operation is started with tutti's non-blocking call and returned as a torch Work built
from a torch.futures.Future (the form torch 1.13 documents for ProcessGroups written in
Python). One waiter thread per process group completes those futures in issue order, which is
the order tutti completes operations on one communicator; so async_op=True is truly
asynchronous and DDP's reducer gets futures it can chain on.

Differences from gloo: send/recv tags are ignored (tutti matches messages in order per pair of
ranks), recv from any source is not supported, and tutti's own deadlines (docs/env.md) apply
instead of the process group's timeout.
"""
import queue
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future

from . import communicator as _c
from .errors import bad_argument

BACKEND_NAME = "tutti"
_UID_KEY = "tutti/unique_id"

_OPS = {"SUM": _c.ReduceOp.SUM, "PRODUCT": _c.ReduceOp.PROD, "MIN": _c.ReduceOp.MIN,
        "MAX": _c.ReduceOp.MAX, "AVG": _c.ReduceOp.AVG, "BAND": _c.ReduceOp.BAND,
        "BOR": _c.ReduceOp.BOR, "BXOR": _c.ReduceOp.BXOR}


def _op(reduce_op):
    kind = getattr(reduce_op, "op", reduce_op)  # ReduceOp wraps a RedOpType in 1.13
    name = getattr(kind, "name", str(kind)).split(".")[-1]
    if name not in _OPS:
        raise bad_argument("tutti backend", "reduction %s is not supported" % name)
    return _OPS[name]


def _single(tensors, what):
    if len(tensors) != 1:
        raise bad_argument(what, "the tutti backend takes exactly one tensor per rank (CPU "
                           "only), got %d" % len(tensors))
    return tensors[0]


def _flat_out(t):
    """A contiguous buffer to receive into and the copy-back it needs (None if t is one)."""
    if t.is_contiguous():
        return t, None
    tmp = torch.empty_like(t, memory_format=torch.contiguous_format)
    return tmp, (lambda: t.copy_(tmp))


def _copy_out(flat, outs):
    """Splits flat into the tensors of outs (in order, equal-size pieces by numel)."""
    off = 0
    for o in outs:
        n = o.numel()
        o.copy_(flat[off:off + n].view(o.shape))
        off += n


class _Waiter:
    """Completes the futures of one process group, in the order the operations were issued."""

    def __init__(self):
        self._q = queue.Queue()
        self._thread = None

    def submit(self, requests, post, result):
        fut = torch.futures.Future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tutti-torch-waiter",
                                            daemon=True)
            self._thread.start()
        self._q.put((requests, post, result, fut))
        return _create_work_from_future(fut)

    def _loop(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            requests, post, result, fut = item
            try:
                for r in requests:
                    r.wait()
                if post is not None:
                    post()
            except Exception as e:  # hand it to whoever waits on the Work
                fut.set_exception(e)
            else:
                fut.set_result(result)

    def stop(self):
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._thread = None


class ProcessGroupTutti(dist.ProcessGroup):
    """A torch ProcessGroup over one tutti communicator."""

    def __init__(self, store, rank, size, timeout=None, comm=None):
        super().__init__(rank, size)
        if comm is None:
            # As ProcessGroupNCCL does with ncclUniqueId: rank 0 makes the id, the store
            # (torch's TCPStore on MASTER_PORT) carries it to the others.
            if rank == 0:
                uid = _c.get_unique_id()
                store.set(_UID_KEY, uid)
            else:
                uid = bytes(store.get(_UID_KEY))
            comm = _c.init(rank, size, uid)
        self.comm = comm
        self._waiter = _Waiter()

    def getBackendName(self):
        return BACKEND_NAME

    def __del__(self):
        w = getattr(self, "_waiter", None)
        if w is not None:
            w.stop()
        c = getattr(self, "comm", None)
        if c is not None:
            c.destroy()

    def _work(self, requests, result, post=None):
        return self._waiter.submit(requests, post, result)

    # ---- reductions ------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        reqs, posts = [], []
        for t in tensors:
            buf, post = _flat_out(t)
            src = buf if post is None else t.contiguous()
            reqs.append(self.comm.iallreduce(src, buf, op))
            if post is not None:
                posts.append(post)
        return self._work(reqs, tensors, (lambda: [p() for p in posts]) if posts else None)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts=None):
        t = _single(tensors, "reduce")
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        buf, post = _flat_out(t)
        src = buf if post is None else t.contiguous()
        req = self.comm.ireduce(src, buf, op, root)
        return self._work([req], tensors, post if self.rank() == root else None)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        buf, post = _flat_out(output)
        req = self.comm.ireduce_scatter(input.contiguous(), buf, op)
        return self._work([req], [output], post)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        out = _single(output_tensors, "reduce_scatter")
        ins = _single(input_tensors, "reduce_scatter")
        if len(ins) != self.size():
            raise bad_argument("reduce_scatter", "needs %d input tensors, got %d"
                               % (self.size(), len(ins)))
        if any(i.numel() != out.numel() or i.dtype != out.dtype for i in ins):
            raise bad_argument("reduce_scatter", "every input must match the output's size "
                               "and dtype")
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self._reduce_scatter_base(out, flat, opts)

    # ---- data movement ---------------------------------------------------------------------
    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        reqs, posts = [], []
        for t in tensors:
            buf, post = _flat_out(t)
            if post is not None:
                buf.copy_(t)
                posts.append(post)
            reqs.append(self.comm.ibroadcast(buf, None, root))
        return self._work(reqs, tensors, (lambda: [p() for p in posts]) if posts else None)

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.size():
            raise bad_argument("all_gather_into_tensor", "output has %d elements; needs "
                               "world_size*input = %d*%d" % (output.numel(), self.size(),
                                                             input.numel()))
        buf, post = _flat_out(output)
        req = self.comm.iallgather(input.contiguous(), buf)
        return self._work([req], [output], post)

    def allgather(self, output_tensors, input_tensors, opts=None):
        outs = _single(output_tensors, "all_gather")
        t = _single(input_tensors, "all_gather").contiguous()
        if len(outs) != self.size():
            raise bad_argument("all_gather", "tensor_list has %d tensors; needs world_size %d"
                               % (len(outs), self.size()))
        for o in outs:
            if o.numel() != t.numel() or o.dtype != t.dtype:
                raise bad_argument("all_gather", "every output must match the input's size "
                                   "and dtype (%s, %d elements)" % (t.dtype, t.numel()))
        flat = torch.empty(self.size() * t.numel(), dtype=t.dtype)
        req = self.comm.iallgather(t, flat)
        return self._work([req], output_tensors, lambda: _copy_out(flat, outs))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        reqs, posts = [], []
        for outs, t in zip(output_lists, input_list):
            t = t.contiguous()
            flat = torch.empty(self.size() * t.numel(), dtype=t.dtype)
            reqs.append(self.comm.iallgather(t, flat))
            posts.append((flat, outs))
        return self._work(reqs, output_lists, lambda: [_copy_out(f, o) for f, o in posts])

    def gather(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        t = _single(input_tensors, "gather").contiguous()
        if self.rank() != root:
            return self._work([self.comm.igather(t, None, root)], [])
        outs = _single(output_tensors, "gather")
        if len(outs) != self.size():
            raise bad_argument("gather", "gather_list has %d tensors; needs world_size %d"
                               % (len(outs), self.size()))
        flat = torch.empty(self.size() * t.numel(), dtype=t.dtype)
        req = self.comm.igather(t, flat, root)
        return self._work([req], output_tensors, lambda: _copy_out(flat, outs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        out = _single(output_tensors, "scatter")
        buf, post = _flat_out(out)
        flat = None
        if self.rank() == root:
            ins = _single(input_tensors, "scatter")
            if len(ins) != self.size():
                raise bad_argument("scatter", "scatter_list has %d tensors; needs world_size "
                                   "%d" % (len(ins), self.size()))
            flat = torch.cat([i.reshape(-1) for i in ins])
        req = self.comm.iscatter(flat, buf, root)
        return self._work([req], output_tensors, post)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        n = self.size()
        inp = input.contiguous()
        buf, post = _flat_out(output)
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or (input.dim() and input.shape[0] % n):
                raise bad_argument("all_to_all_single", "input and output must have the same "
                                   "size, with dim 0 divisible by world_size %d" % n)
            req = self.comm.ialltoall(inp, buf)
            return self._work([req], [output], post)
        # Split sizes count rows (dim 0); tutti counts elements.
        srow = inp.numel() // inp.shape[0] if inp.dim() and inp.shape[0] else 0
        rrow = buf.numel() // buf.shape[0] if buf.dim() and buf.shape[0] else 0
        ssplit = list(input_split_sizes) or [inp.shape[0] // n] * n
        rsplit = list(output_split_sizes) or [buf.shape[0] // n] * n
        if sum(ssplit) != (inp.shape[0] if inp.dim() else 0) or \
                sum(rsplit) != (buf.shape[0] if buf.dim() else 0):
            raise bad_argument("all_to_all_single", "split sizes must add up to dim 0 of "
                               "input and output")
        req = self.comm.ialltoallv(inp, [s * srow for s in ssplit], None, buf,
                                   [s * rrow for s in rsplit], None)
        return self._work([req], [output], post)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        n = self.size()
        if len(output_tensors) != n or len(input_tensors) != n:
            raise bad_argument("all_to_all", "needs %d input and %d output tensors" % (n, n))
        dtype = input_tensors[0].dtype
        if any(t.dtype != dtype for t in list(input_tensors) + list(output_tensors)):
            raise bad_argument("all_to_all", "all tensors must have one dtype")
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        flat_out = torch.empty(sum(t.numel() for t in output_tensors), dtype=dtype)
        req = self.comm.ialltoallv(flat_in, [t.numel() for t in input_tensors], None, flat_out,
                                   [t.numel() for t in output_tensors], None)
        return self._work([req], output_tensors, lambda: _copy_out(flat_out, output_tensors))

    def barrier(self, opts=None):
        return self._work([self.comm.ibarrier()], [])

    # ---- point-to-point --------------------------------------------------------------------
    def send(self, tensors, dstRank, tag=0):
        t = _single(tensors, "send").contiguous()
        return self._work([self.comm.isend(t, dstRank)], tensors)

    def recv(self, tensors, srcRank, tag=0):
        t = _single(tensors, "recv")
        buf, post = _flat_out(t)
        return self._work([self.comm.irecv(buf, srcRank)], tensors, post)

    def recv_anysource(self, tensors, tag=0):
        raise bad_argument("recv", "the tutti backend needs a source rank (no recv from any "
                           "source)")


def _create(store, rank, size, timeout):
    return ProcessGroupTutti(store, rank, size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create)
