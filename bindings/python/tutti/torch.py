"""torch.distributed backend "tutti": ``import tutti.torch``, then
``dist.init_process_group(backend="tutti")``.

How an operation runs depends on who will wait for it:
- called by a torch.distributed function that waits at once (async_op=False, send, recv):
  tutti's blocking call runs inline and the Work returned is already complete. That is what
  starting a request and waiting would do, without the hand-off to another thread;
- called with async_op=True (or isend/irecv): tutti's non-blocking call starts it, and the
  process group's waiter thread completes the Work's future when tutti's request finishes
  (in issue order, the order tutti completes operations on one communicator);
- any other caller (DDP's reducer, code calling the group directly): inline when it is small
  (at most ``inline_max_bytes``), a collective and nothing of this group is still in flight,
  so nothing it runs after can be needed first; otherwise as with async_op=True.
Contiguous CPU tensors go to the library by pointer, with no copy and no intermediate object.

Differences from gloo: send/recv tags are ignored (tutti matches messages in order per pair of
ranks), recv from any source is not supported, and tutti's own deadlines (docs/env.md) apply
instead of the process group's timeout.
"""
import ctypes
import sys

import torch
import torch.distributed as dist

from . import communicator as _c
from ._lib import lib
from ._torch_caller import RETURNS_WORK, WAITS, caller_waits
from ._torch_work import Waiter, back_to_back, completed, moving, overlaps, plain
from .errors import bad_argument, check

BACKEND_NAME = "tutti"
_UID_KEY = "tutti/unique_id"

# Unknown callers get small collectives inline: about the size where tutti's own time starts
# to exceed the waiter thread's hand-off on a busy machine.
INLINE_MAX_BYTES = 256 << 10

_OPS = {"SUM": int(_c.ReduceOp.SUM), "PRODUCT": int(_c.ReduceOp.PROD),
        "MIN": int(_c.ReduceOp.MIN), "MAX": int(_c.ReduceOp.MAX), "AVG": int(_c.ReduceOp.AVG),
        "BAND": int(_c.ReduceOp.BAND), "BOR": int(_c.ReduceOp.BOR),
        "BXOR": int(_c.ReduceOp.BXOR)}

# How an operation runs: inline, with tutti's blocking call (its error raised at once: torch
# 1.13's Work.wait() would not raise a future's error anyway); or started with the
# non-blocking call and completed by the waiter thread.
_NOW, _ASYNC = "now", "async"

# tutti_<name> and tutti_i<name>, looked up once.
_BLOCKING, _NONBLOCKING = {}, {}
for _name in ("allreduce", "broadcast", "allgather", "reduce_scatter", "reduce", "barrier"):
    _BLOCKING[_name] = getattr(lib, "tutti_" + _name)
    _NONBLOCKING[_name] = getattr(lib, "tutti_i" + _name)


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


def _all_plain(tensors, like):
    """Descriptions of tensors if every one is plain and has like's dtype and size, else None."""
    ds = []
    for t in tensors:
        d = plain(t)
        if d is None or t.dtype != like.dtype or d[1] != like.numel():
            return None
        ds.append(d)
    return ds


class ProcessGroupTutti(dist.ProcessGroup):
    """A torch ProcessGroup over one tutti communicator."""

    # Largest operation (bytes of its largest buffer) run inline for callers that may not
    # wait at once (see the module's docstring); set it on an instance to change that group.
    inline_max_bytes = INLINE_MAX_BYTES

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
        self._rank, self._size = comm.rank, comm.size
        self._waiter = Waiter()

    def getBackendName(self):
        return BACKEND_NAME

    def __del__(self):
        w = getattr(self, "_waiter", None)
        if w is not None:
            w.stop()
        c = getattr(self, "comm", None)
        if c is not None:
            c.destroy()

    # ---- how an operation runs -------------------------------------------------------------
    def _mode(self, frame, nbytes):
        """For the direct path: inline when the caller waits at once, or when the call is small
        and nothing of this group is in flight; else started and left to the waiter."""
        w = caller_waits(frame)
        if w is WAITS:
            return _NOW
        if w is RETURNS_WORK or nbytes > self.inline_max_bytes or not self._waiter.idle():
            return _ASYNC
        return _NOW

    @staticmethod
    def _general_mode(frame):
        """For the general path (any layout, checked by the Communicator): inline only when
        the caller waits at once."""
        return _NOW if caller_waits(frame) is WAITS else _ASYNC

    def _run(self, mode, name, args, keep, result, post=None):
        """The direct path: tutti_<name>(*args) inline, or tutti_i<name> completed by the
        waiter thread. args end with the communicator handle; keep holds the tensors the
        library uses until the request finishes."""
        if mode is _ASYNC:
            req = ctypes.c_void_p()
            check(_NONBLOCKING[name](*args, ctypes.byref(req)), args[-1], "tutti_i" + name)
            r = _c.Request(self.comm, req.value, "tutti_i" + name, keep, None)
            return self._waiter.submit([r], post, result)
        check(_BLOCKING[name](*args), args[-1], "tutti_" + name)
        if post is not None:
            post()
        return completed(result)

    def _start(self, mode, name, *args):
        """The general path: the Communicator's blocking call (returns None) or its
        non-blocking twin (returns the Request)."""
        if mode is _ASYNC:
            return getattr(self.comm, "i" + name)(*args)
        getattr(self.comm, name)(*args)
        return None

    def _work(self, mode, reqs, result, post=None):
        if mode is _ASYNC:
            return self._waiter.submit(reqs, post, result)
        if post is not None:
            post()
        return completed(result)

    # ---- reductions ------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        return self._allreduce(tensors, opts, sys._getframe().f_back)

    def allreduce_coalesced(self, tensors, opts=None):
        return self._allreduce(tensors, opts, sys._getframe().f_back)

    def _allreduce(self, tensors, opts, frame):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        h = self.comm._handle
        if len(tensors) == 1 and h:
            d = plain(tensors[0])
            if d is not None and d[2] is not None:
                return self._run(self._mode(frame, d[1] * d[3]), "allreduce",
                                 (d[0], d[0], d[1], d[2], op, h), tensors, tensors)
        mode = self._general_mode(frame)
        reqs, posts = [], []
        for t in tensors:
            buf, post = _flat_out(t)
            src = buf if post is None else t.contiguous()
            reqs.append(self._start(mode, "allreduce", src, buf, op))
            if post is not None:
                posts.append(post)
        return self._work(mode, reqs, tensors, (lambda: [p() for p in posts]) if posts else None)

    def reduce(self, tensors, opts=None):
        frame = sys._getframe().f_back
        t = _single(tensors, "reduce")
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        is_root = self._rank == root
        h = self.comm._handle
        d = plain(t)
        if h and d is not None and d[2] is not None and 0 <= root < self._size:
            return self._run(self._mode(frame, d[1] * d[3]), "reduce",
                             (d[0], d[0] if is_root else None, d[1], d[2], op, root, h),
                             tensors, tensors)
        mode = self._general_mode(frame)
        buf, post = _flat_out(t)
        src = buf if post is None else t.contiguous()
        req = self._start(mode, "reduce", src, buf, op, root)
        return self._work(mode, [req], tensors, post if is_root else None)

    def _reduce_scatter_base(self, output, input, opts=None):
        return self._reduce_scatter_flat(output, input, opts, sys._getframe().f_back)

    def _reduce_scatter_flat(self, output, input, opts, frame):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        h = self.comm._handle
        do, di = plain(output), plain(input)
        if h and do is not None and di is not None and do[2] is not None and \
                output.dtype == input.dtype and di[1] == do[1] * self._size:
            return self._run(self._mode(frame, di[1] * di[3]), "reduce_scatter",
                             (di[0], do[0], do[1], do[2], op, h), (input, output), [output])
        mode = self._general_mode(frame)
        buf, post = _flat_out(output)
        req = self._start(mode, "reduce_scatter", input.contiguous(), buf, op)
        return self._work(mode, [req], [output], post)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        frame = sys._getframe().f_back
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        out = _single(output_tensors, "reduce_scatter")
        ins = _single(input_tensors, "reduce_scatter")
        if len(ins) != self._size:
            raise bad_argument("reduce_scatter", "needs %d input tensors, got %d"
                               % (self._size, len(ins)))
        if any(i.numel() != out.numel() or i.dtype != out.dtype for i in ins):
            raise bad_argument("reduce_scatter", "every input must match the output's size "
                               "and dtype")
        h = self.comm._handle
        ds, do = _all_plain(ins, out), plain(out)
        if h and ds and do is not None and do[2] is not None and back_to_back(ds):
            # The inputs already form one buffer (e.g. chunks of one tensor): no concatenation.
            piece = do[1] * do[3]
            total = piece * self._size
            if do[0] == ds[self._rank][0] or not overlaps(ds[0][0], total, do[0], piece):
                return self._run(self._mode(frame, total), "reduce_scatter",
                                 (ds[0][0], do[0], do[1], do[2], op, h), (ins, out), [out])
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self._reduce_scatter_flat(out, flat, opts, frame)

    # ---- data movement ---------------------------------------------------------------------
    def broadcast(self, tensors, opts=None):
        frame = sys._getframe().f_back
        root = opts.rootRank if opts is not None else 0
        h = self.comm._handle
        if len(tensors) == 1 and h and 0 <= root < self._size:
            d = plain(tensors[0])
            if d is not None:
                p, n, code = moving(d)
                return self._run(self._mode(frame, d[1] * d[3]), "broadcast",
                                 (p, p, n, code, root, h), tensors, tensors)
        mode = self._general_mode(frame)
        reqs, posts = [], []
        for t in tensors:
            buf, post = _flat_out(t)
            if post is not None:
                buf.copy_(t)
                posts.append(post)
            reqs.append(self._start(mode, "broadcast", buf, None, root))
        return self._work(mode, reqs, tensors, (lambda: [p() for p in posts]) if posts else None)

    def _allgather_base(self, output, input, opts=None):
        frame = sys._getframe().f_back
        if output.numel() != input.numel() * self._size:
            raise bad_argument("all_gather_into_tensor", "output has %d elements; needs "
                               "world_size*input = %d*%d" % (output.numel(), self._size,
                                                             input.numel()))
        h = self.comm._handle
        do, di = plain(output), plain(input)
        if h and do is not None and di is not None and output.dtype == input.dtype:
            p, n, code = moving(di)
            return self._run(self._mode(frame, do[1] * do[3]), "allgather",
                             (p, do[0], n, code, h), (input, output), [output])
        mode = self._general_mode(frame)
        buf, post = _flat_out(output)
        req = self._start(mode, "allgather", input.contiguous(), buf)
        return self._work(mode, [req], [output], post)

    def allgather(self, output_tensors, input_tensors, opts=None):
        frame = sys._getframe().f_back
        outs = _single(output_tensors, "all_gather")
        t = _single(input_tensors, "all_gather")
        if len(outs) != self._size:
            raise bad_argument("all_gather", "tensor_list has %d tensors; needs world_size %d"
                               % (len(outs), self._size))
        for o in outs:
            if o.numel() != t.numel() or o.dtype != t.dtype:
                raise bad_argument("all_gather", "every output must match the input's size "
                                   "and dtype (%s, %d elements)" % (t.dtype, t.numel()))
        h = self.comm._handle
        di = plain(t)
        ds = _all_plain(outs, t) if di is not None else None
        if h and ds:
            piece = di[1] * di[3]
            total = piece * self._size
            mode = self._mode(frame, total)
            p, n, code = moving(di)
            if back_to_back(ds) and (di[0] == ds[self._rank][0] or
                                     not overlaps(di[0], piece, ds[0][0], total)):
                # The outputs already form one buffer (e.g. chunks of one tensor): gather
                # straight into them, in place when the input is this rank's chunk.
                return self._run(mode, "allgather", (p, ds[0][0], n, code, h), (t, outs),
                                 output_tensors)
            flat = torch.empty(self._size * t.numel(), dtype=t.dtype)
            return self._run(mode, "allgather", (p, flat.data_ptr(), n, code, h), (t, flat),
                             output_tensors, lambda: _copy_out(flat, outs))
        mode = self._general_mode(frame)
        t = t.contiguous()
        flat = torch.empty(self._size * t.numel(), dtype=t.dtype)
        req = self._start(mode, "allgather", t, flat)
        return self._work(mode, [req], output_tensors, lambda: _copy_out(flat, outs))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        mode = self._general_mode(sys._getframe().f_back)
        reqs, posts = [], []
        for outs, t in zip(output_lists, input_list):
            t = t.contiguous()
            flat = torch.empty(self._size * t.numel(), dtype=t.dtype)
            reqs.append(self._start(mode, "allgather", t, flat))
            posts.append((flat, outs))
        return self._work(mode, reqs, output_lists,
                          lambda: [_copy_out(f, o) for f, o in posts])

    def gather(self, output_tensors, input_tensors, opts=None):
        mode = self._general_mode(sys._getframe().f_back)
        root = opts.rootRank if opts is not None else 0
        t = _single(input_tensors, "gather").contiguous()
        if self._rank != root:
            return self._work(mode, [self._start(mode, "gather", t, None, root)], [])
        outs = _single(output_tensors, "gather")
        if len(outs) != self._size:
            raise bad_argument("gather", "gather_list has %d tensors; needs world_size %d"
                               % (len(outs), self._size))
        flat = torch.empty(self._size * t.numel(), dtype=t.dtype)
        req = self._start(mode, "gather", t, flat, root)
        return self._work(mode, [req], output_tensors, lambda: _copy_out(flat, outs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        mode = self._general_mode(sys._getframe().f_back)
        root = opts.rootRank if opts is not None else 0
        out = _single(output_tensors, "scatter")
        buf, post = _flat_out(out)
        flat = None
        if self._rank == root:
            ins = _single(input_tensors, "scatter")
            if len(ins) != self._size:
                raise bad_argument("scatter", "scatter_list has %d tensors; needs world_size "
                                   "%d" % (self._size, len(ins)))
            flat = torch.cat([i.reshape(-1) for i in ins])
        req = self._start(mode, "scatter", flat, buf, root)
        return self._work(mode, [req], output_tensors, post)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        mode = self._general_mode(sys._getframe().f_back)
        n = self._size
        inp = input.contiguous()
        buf, post = _flat_out(output)
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or (input.dim() and input.shape[0] % n):
                raise bad_argument("all_to_all_single", "input and output must have the same "
                                   "size, with dim 0 divisible by world_size %d" % n)
            req = self._start(mode, "alltoall", inp, buf)
            return self._work(mode, [req], [output], post)
        # Split sizes count rows (dim 0); tutti counts elements.
        srow = inp.numel() // inp.shape[0] if inp.dim() and inp.shape[0] else 0
        rrow = buf.numel() // buf.shape[0] if buf.dim() and buf.shape[0] else 0
        ssplit = list(input_split_sizes) or [inp.shape[0] // n] * n
        rsplit = list(output_split_sizes) or [buf.shape[0] // n] * n
        if sum(ssplit) != (inp.shape[0] if inp.dim() else 0) or \
                sum(rsplit) != (buf.shape[0] if buf.dim() else 0):
            raise bad_argument("all_to_all_single", "split sizes must add up to dim 0 of "
                               "input and output")
        req = self._start(mode, "alltoallv", inp, [s * srow for s in ssplit], None, buf,
                          [s * rrow for s in rsplit], None)
        return self._work(mode, [req], [output], post)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        mode = self._general_mode(sys._getframe().f_back)
        n = self._size
        if len(output_tensors) != n or len(input_tensors) != n:
            raise bad_argument("all_to_all", "needs %d input and %d output tensors" % (n, n))
        dtype = input_tensors[0].dtype
        if any(t.dtype != dtype for t in list(input_tensors) + list(output_tensors)):
            raise bad_argument("all_to_all", "all tensors must have one dtype")
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        flat_out = torch.empty(sum(t.numel() for t in output_tensors), dtype=dtype)
        req = self._start(mode, "alltoallv", flat_in, [t.numel() for t in input_tensors], None,
                          flat_out, [t.numel() for t in output_tensors], None)
        return self._work(mode, [req], output_tensors,
                          lambda: _copy_out(flat_out, output_tensors))

    def barrier(self, opts=None):
        frame = sys._getframe().f_back
        h = self.comm._handle
        if h:
            return self._run(self._mode(frame, 0), "barrier", (h,), (), [])
        mode = self._general_mode(frame)
        return self._work(mode, [self._start(mode, "barrier")], [])

    # ---- point-to-point --------------------------------------------------------------------
    # Never inline unless torch waits at once: an irecv posted before this rank's own send
    # must not block that send.
    def send(self, tensors, dstRank, tag=0):
        mode = self._general_mode(sys._getframe().f_back)
        t = _single(tensors, "send").contiguous()
        return self._work(mode, [self._start(mode, "send", t, dstRank)], tensors)

    def recv(self, tensors, srcRank, tag=0):
        mode = self._general_mode(sys._getframe().f_back)
        t = _single(tensors, "recv")
        buf, post = _flat_out(t)
        return self._work(mode, [self._start(mode, "recv", buf, srcRank)], tensors, post)

    def recv_anysource(self, tensors, tag=0):
        raise bad_argument("recv", "the tutti backend needs a source rank (no recv from any "
                           "source)")


def _create(store, rank, size, timeout):
    return ProcessGroupTutti(store, rank, size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create)
