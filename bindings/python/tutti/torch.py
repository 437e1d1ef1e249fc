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

send/recv honour tags (tutti_send_tag / tutti_recv_tag: matched per source and tag, in order),
and recv/irecv without a source receive from any rank (the Work's source_rank() names it).
The ``timeout`` of init_process_group / new_group is the communicator's deadline
(tutti_comm_set_timeout); a call past it raises an error whose text contains "Timed out".
bool tensors reduce as NCCL's backend does (as uint8: SUM/MAX are a logical or, PRODUCT/MIN a
logical and). Sparse all_reduce (SUM) gathers every rank's indices and values and coalesces,
as gloo does.
"""
import atexit
import weakref
import ctypes
import sys

import torch
import torch.distributed as dist

from . import communicator as _c
from ._lib import lib
from ._registered import StagingPool
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


def _op_name(reduce_op):
    kind = getattr(reduce_op, "op", reduce_op)  # ReduceOp wraps a RedOpType in 1.13
    return getattr(kind, "name", str(kind)).split(".")[-1]


def _op(reduce_op):
    name = _op_name(reduce_op)
    if name not in _OPS:
        raise bad_argument("tutti backend", "reduction %s is not supported" % name)
    return _OPS[name]


# bool as NCCL's backend reduces it: bytes of 0/1, where MAX is a logical or and MIN a logical
# and; SUM and PRODUCT map onto them so that the result stays 0 or 1.
_BOOL_OPS = {"SUM": "MAX", "MAX": "MAX", "PRODUCT": "MIN", "MIN": "MIN", "BAND": "BAND",
             "BOR": "BOR", "BXOR": "BXOR"}


def _reduction(reduce_op, tensors, what):
    """(tutti op, tensors to pass): bool tensors become uint8 views of the same memory."""
    if not any(t.dtype == torch.bool for t in tensors):
        return _op(reduce_op), tensors
    if any(t.dtype != torch.bool for t in tensors):
        raise bad_argument(what, "bool and other tensors cannot be mixed in one call")
    name = _op_name(reduce_op)
    if name not in _BOOL_OPS:
        raise bad_argument(what, "reduction %s is not defined on bool tensors (SUM, PRODUCT, "
                           "MIN, MAX, BAND, BOR, BXOR are)" % name)
    return _OPS[_BOOL_OPS[name]], [t.view(torch.uint8) for t in tensors]


def _ranked_work(work, source_of):
    """work (a torch Work) that also answers source_rank(): source_of() after it is done."""
    return _SourceWork(work, source_of)


class _SourceWork(dist.Work):
    """A receive's Work that knows who sent what it received (recv from any source)."""

    def __init__(self, inner, source_of):
        super().__init__()
        self._inner = inner
        self._source_of = source_of

    def wait(self, timeout=None):
        return self._inner.wait() if timeout is None else self._inner.wait(timeout)

    def is_completed(self):
        return self._inner.is_completed()

    def is_success(self):
        return self._inner.is_success()

    def exception(self):
        return self._inner.exception()

    def get_future(self):
        return self._inner.get_future()

    def source_rank(self):
        return self._source_of()

    _source_rank = source_rank


# Every live group, so that exit destroys them while the library and threads still exist
# (a script need not call destroy_process_group()).
_LIVE = weakref.WeakSet()


@atexit.register
def _shutdown_all():
    for pg in list(_LIVE):
        pg._shutdown()


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
        # The group's own staging buffers (list forms of all_gather and reduce_scatter) are
        # registered memory, so that the single-copy algorithm reads them in place.
        self._staging = StagingPool(comm)
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
        if seconds is not None and seconds > 0:
            # torch's timeout= is the communicator's deadline for every wait.
            comm.set_timeout(seconds)
        _LIVE.add(self)

    def getBackendName(self):
        return BACKEND_NAME

    def _shutdown(self):
        w, self._waiter = getattr(self, "_waiter", None), None
        if w is not None:
            w.stop()
        st, self._staging = getattr(self, "_staging", None), None
        if st is not None:
            st.clear()
        c, self.comm = getattr(self, "comm", None), None
        if c is not None:
            c.destroy()

    def __del__(self):
        self._shutdown()

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
        reduce_op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        if any(t.is_sparse for t in tensors):
            return self._sparse_allreduce(tensors, reduce_op)
        result = tensors
        op, tensors = _reduction(reduce_op, tensors, "all_reduce")
        h = self.comm._handle
        if len(tensors) == 1 and h:
            d = plain(tensors[0])
            if d is not None and d[2] is not None:
                return self._run(self._mode(frame, d[1] * d[3]), "allreduce",
                                 (d[0], d[0], d[1], d[2], op, h), tensors, result)
        mode = self._general_mode(frame)
        reqs, posts = [], []
        for t in tensors:
            buf, post = _flat_out(t)
            src = buf if post is None else t.contiguous()
            reqs.append(self._start(mode, "allreduce", src, buf, op))
            if post is not None:
                posts.append(post)
        return self._work(mode, reqs, result, (lambda: [p() for p in posts]) if posts else None)

    def _sparse_allreduce(self, tensors, reduce_op):
        """gloo's sparse all-reduce: every rank's indices and values gathered, summed by
        coalescing; the result replaces each input (in place, as gloo's does)."""
        if _op_name(reduce_op) != "SUM":
            raise bad_argument("all_reduce", "sparse tensors reduce with SUM only (as gloo)")
        for t in tensors:
            if not t.is_sparse or t.device.type != "cpu":
                raise bad_argument("all_reduce", "sparse all_reduce takes sparse CPU tensors "
                                   "only")
            t.copy_(self._sparse_sum(t))
        return completed(tensors)

    def _sparse_sum(self, t):
        t = t.coalesce()
        idx, val = t.indices().contiguous(), t.values().contiguous()
        nnz = torch.tensor([idx.shape[1]], dtype=torch.int64)
        counts = self.comm.allgather(nnz).reshape(-1).tolist()
        total = sum(counts)
        dims, row = idx.shape[0], val[0].numel() if val.dim() > 1 else 1
        # Indices go as one row per dimension: rank-major blocks of each dimension.
        all_idx = torch.empty(dims, total, dtype=torch.int64)
        for d in range(dims):
            self.comm.allgatherv(idx[d].contiguous(), all_idx[d], counts)
        all_val = torch.empty((total,) + tuple(val.shape[1:]), dtype=val.dtype)
        self.comm.allgatherv(val.reshape(-1), all_val.reshape(-1), [c * row for c in counts])
        return torch.sparse_coo_tensor(all_idx, all_val, t.shape).coalesce()

    def reduce(self, tensors, opts=None):
        frame = sys._getframe().f_back
        result = tensors
        op, tensors = _reduction(opts.reduceOp if opts is not None else dist.ReduceOp.SUM,
                                 tensors, "reduce")
        t = _single(tensors, "reduce")
        root = opts.rootRank if opts is not None else 0
        is_root = self._rank == root
        h = self.comm._handle
        d = plain(t)
        if h and d is not None and d[2] is not None and 0 <= root < self._size:
            return self._run(self._mode(frame, d[1] * d[3]), "reduce",
                             (d[0], d[0] if is_root else None, d[1], d[2], op, root, h),
                             tensors, result)
        mode = self._general_mode(frame)
        buf, post = _flat_out(t)
        src = buf if post is None else t.contiguous()
        req = self._start(mode, "reduce", src, buf, op, root)
        return self._work(mode, [req], result, post if is_root else None)

    def _reduce_scatter_base(self, output, input, opts=None):
        return self._reduce_scatter_flat(output, input, opts, sys._getframe().f_back)

    def _reduce_scatter_flat(self, output, input, opts, frame):
        op, (output, input) = _reduction(opts.reduceOp if opts is not None
                                         else dist.ReduceOp.SUM, [output, input],
                                         "reduce_scatter")
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
        out = _single(output_tensors, "reduce_scatter")
        ins = _single(input_tensors, "reduce_scatter")
        op, both = _reduction(opts.reduceOp if opts is not None else dist.ReduceOp.SUM,
                              [out] + list(ins), "reduce_scatter")
        if out.dtype == torch.bool:
            # The flat path below does the bool mapping once, on the concatenated input.
            return self._reduce_scatter_flat(out, torch.cat([i.reshape(-1) for i in ins]),
                                             opts, frame)
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
        if h and ds and do is not None and do[2] is not None:
            # One registered buffer of the concatenated inputs, which the peers read.
            piece = do[1] * do[3]
            reg = self._staging.take(piece * self._size)
            flat = reg.tensor((do[1] * self._size,), out.dtype)
            torch.cat([i.reshape(-1) for i in ins], out=flat)
            return self._run(self._mode(frame, piece * self._size), "reduce_scatter",
                             (flat.data_ptr(), do[0], do[1], do[2], op, h), (ins, out, flat),
                             [out], lambda: self._staging.give(reg))
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
            # Gathered in place in one registered buffer: this rank's piece is copied in first
            # (the copy an out-of-place call makes anyway), and the peers read it in place.
            reg = self._staging.take(total)
            flat = reg.tensor((self._size * t.numel(),), t.dtype)
            mine = flat[self._rank * t.numel():(self._rank + 1) * t.numel()]
            mine.copy_(t.reshape(-1))
            return self._run(mode, "allgather", (mine.data_ptr(), flat.data_ptr(), n, code, h),
                             (t, flat), output_tensors,
                             lambda: (_copy_out(flat, outs), self._staging.give(reg)))
        mode = self._general_mode(frame)
        t = t.contiguous()
        flat = torch.empty(self._size * t.numel(), dtype=t.dtype)
        req = self._start(mode, "allgather", t, flat)
        return self._work(mode, [req], output_tensors, lambda: _copy_out(flat, outs))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """torch's layout: output_lists[rank][i] receives input i of that rank."""
        mode = self._general_mode(sys._getframe().f_back)
        if len(output_lists) != self._size or \
                any(len(outs) != len(input_list) for outs in output_lists):
            raise bad_argument("all_gather_coalesced", "output_tensor_lists must hold "
                               "world_size %d lists of %d tensors (one per input)"
                               % (self._size, len(input_list)))
        reqs, posts = [], []
        for i, t in enumerate(input_list):
            outs = [output_lists[r][i] for r in range(self._size)]
            if any(o.numel() != t.numel() or o.dtype != t.dtype for o in outs):
                raise bad_argument("all_gather_coalesced", "output_tensor_lists[r][%d] must "
                                   "match input %d's size and dtype" % (i, i))
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
        if mode is _ASYNC:
            return self._work(mode, [self.comm.isend(t, dstRank, tag)], tensors)
        self.comm.send(t, dstRank, tag)
        return completed(tensors)

    def recv(self, tensors, srcRank, tag=0):
        return self._recv(tensors, srcRank, tag, sys._getframe().f_back)

    def recv_anysource(self, tensors, tag=0):
        return self._recv(tensors, None, tag, sys._getframe().f_back)

    def _recv(self, tensors, src, tag, frame):
        mode = self._general_mode(frame)
        t = _single(tensors, "recv")
        buf, post = _flat_out(t)
        if mode is _ASYNC:
            req = self.comm.irecv(buf, src, tag)
            work = self._work(mode, [req], tensors, post)
            return _ranked_work(work, lambda: req.source)
        _, source, _ = self.comm.recv_from(buf, _c.ANY_SOURCE if src is None else src, tag)
        if post is not None:
            post()
        return _ranked_work(completed(tensors), lambda: source)


def _create(store, rank, size, timeout):
    return ProcessGroupTutti(store, rank, size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create)
