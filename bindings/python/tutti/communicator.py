"""Communicator and Request: every operation of include/tutti.h over NumPy arrays and CPU
torch tensors.

Conventions (the same for every collective):
- Blocking calls return the output buffer; ``i``-prefixed calls return a Request whose
  ``wait()`` returns it. A missing output buffer is allocated (uninitialised, then filled).
- In place: pass the same object (or, for all-gather, a view of the output) as both buffers,
  exactly as in C: the library recognises in-place calls by pointer.
- Element counts come from the buffers; shapes are checked here first, so a wrong size raises
  InvalidArgumentError with a sentence instead of reaching the library.
"""
import ctypes
import enum
import operator
import threading
import weakref

import numpy as np

from . import _buffers as B
from ._lib import ANY_SOURCE, ANY_TAG, Status, UniqueId, UNIQUE_ID_BYTES, lib
from .errors import bad_argument, check, check_init, error_for


class ReduceOp(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
    BAND = 5
    BOR = 6
    BXOR = 7


SPLIT_NOCOLOR = -1

# tutti_group_start/end nest per thread; buffers of calls made inside a group must stay alive
# until the outermost group_end, so each thread keeps them here.
_group_state = threading.local()


def _group_keep():
    return getattr(_group_state, "keep", None)


def group_start():
    """ncclGroupStart: calls of this thread are collected until the matching group_end()."""
    check(lib.tutti_group_start(), None, "tutti_group_start")
    depth = getattr(_group_state, "depth", 0)
    if depth == 0:
        _group_state.keep = []
    _group_state.depth = depth + 1


def group_end():
    """Runs the calls collected since the outermost group_start(); raises the first failure."""
    depth = getattr(_group_state, "depth", 0)
    if depth == 0:
        raise error_for(2, "tutti_group_end: no group_start() on this thread")
    rc = lib.tutti_group_end()
    _group_state.depth = depth - 1
    if depth == 1:
        _group_state.keep = None
    check(rc, None, "tutti_group_end")


class group:
    """``with tutti.group(): ...`` runs group_start() on entry and group_end() on exit."""

    def __enter__(self):
        group_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        group_end()
        return False


def get_unique_id():
    """Starts a rendezvous listener here; returns the id (bytes) every rank passes to init()."""
    uid = UniqueId()
    check(lib.tutti_get_unique_id(ctypes.byref(uid)), None, "tutti_get_unique_id")
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)


def init(rank, size, unique_id):
    """Joins the communicator of `size` ranks described by unique_id as `rank` (collective)."""
    if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != UNIQUE_ID_BYTES:
        raise bad_argument("tutti.init", "unique_id must be the %d bytes of get_unique_id()"
                           % UNIQUE_ID_BYTES)
    try:
        rank, size = operator.index(rank), operator.index(size)
    except TypeError:
        raise bad_argument("tutti.init", "rank and size must be integers") from None
    if size < 1:
        raise bad_argument("tutti.init", "size must be a positive int, got %r" % (size,))
    if not 0 <= rank < size:
        raise bad_argument("tutti.init", "rank %r is not in [0, %d)" % (rank, size))
    uid = UniqueId()
    ctypes.memmove(ctypes.byref(uid), bytes(unique_id), UNIQUE_ID_BYTES)
    handle = ctypes.c_void_p()
    check_init(lib.tutti_comm_init_rank(ctypes.byref(handle), size, ctypes.byref(uid), rank),
               "tutti_comm_init_rank (rank %d of %d)" % (rank, size))
    return Communicator(handle)


def init_env():
    """Joins the communicator the environment describes (TUTTI_*, torchrun, Open MPI, Slurm)."""
    handle = ctypes.c_void_p()
    check_init(lib.tutti_comm_init_env(ctypes.byref(handle)), "tutti_comm_init_env")
    return Communicator(handle)


def _sizes(values, n, what):
    """A ctypes size_t[n] from a sequence of n non-negative ints."""
    values = [int(v) for v in values]
    if len(values) != n:
        raise bad_argument(what, "needs %d entries (one per rank), got %d" % (n, len(values)))
    if any(v < 0 for v in values):
        raise bad_argument(what, "entries must be >= 0, got %r" % (values,))
    return (ctypes.c_size_t * n)(*values)


def _prefix(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += int(c)
    return out


class Request:
    """A non-blocking operation in flight. wait() returns its output; test() polls."""

    def __init__(self, comm, handle, what, keep, result, post=None):
        self._comm = comm
        self._handle = handle
        self._what = what
        self._keep = keep  # buffers the library may touch until completion
        self._result = result
        self._post = post
        self._error = None
        self._done = False
        self.source = None  # a receive's: who sent the message it matched, and its tag
        self.tag = None
        self._lib = lib  # see Communicator.__init__

    def _finish(self, rc):
        if rc == 0:
            st = Status(-1, -1)
            if self._lib.tutti_request_status(self._handle, ctypes.byref(st)) == 0 and \
                    st.source >= 0:
                self.source, self.tag = st.source, st.tag
        self._lib.tutti_request_free(self._handle)
        self._handle = None
        self._keep = None
        self._done = True
        if rc != 0:
            try:
                check(rc, self._comm._handle, self._what)
            except Exception as e:  # kept so that every later wait() raises it again
                self._error = e
        elif self._post is not None:
            self._post()

    def wait(self):
        if not self._done:
            self._finish(lib.tutti_wait(self._handle))
        if self._error is not None:
            raise self._error
        return self._result

    def test(self):
        """True once complete (raising its error, if any); False while in flight."""
        if not self._done:
            done = ctypes.c_int(0)
            rc = lib.tutti_test(self._handle, ctypes.byref(done))
            if not done.value and rc == 0:
                return False
            self._finish(rc)
        if self._error is not None:
            raise self._error
        return True

    def __del__(self):
        # Freeing a running request lets it finish in the background, but our buffers would
        # die with us: finish it first.
        if getattr(self, "_handle", None) is not None:
            self._finish(self._lib.tutti_wait(self._handle))


class PremulSumOp:
    """An operation from Communicator.create_premul_sum(): multiply by a scalar, then sum."""

    def __init__(self, comm, value, dtype):
        self.comm, self.value, self.dtype = comm, value, dtype

    def __int__(self):
        return self.value

    def destroy(self):
        if self.value is not None and self.comm._handle:
            check(lib.tutti_op_destroy(self.value, self.comm._handle), self.comm._handle,
                  "tutti_op_destroy")
        self.value = None


def _scalar_bytes(value, dtype):
    """The bytes of one element of tutti type dtype holding value (bfloat16: round to even)."""
    if dtype == B.BFLOAT16:
        bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return np.array([bits], dtype=np.uint16).tobytes()
    for npt, code in B._NUMPY.items():
        if code == dtype:
            return np.array([value], dtype=npt).tobytes()
    raise bad_argument("create_premul_sum", "unsupported dtype %r" % (dtype,))


def _dtype_code(dtype):
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str):
        for code, name in B.DTYPE_NAMES.items():
            if name == dtype:
                return code
    try:
        return B._NUMPY[np.dtype(dtype)]
    except TypeError:
        pass
    code = B._torch_dtypes().get(dtype) if B.is_tensor_dtype(dtype) else None
    if code is None:
        raise bad_argument("dtype", "unknown element type %r" % (dtype,))
    return code


class Communicator:
    """A group of ranks that call collectives together (tutti_comm_t)."""

    def __init__(self, handle):
        # Held by the object: at interpreter exit the module's globals may be gone before a
        # finaliser (ours, or a torch process group's) runs.
        self._lib = lib
        self._handle = handle.value if isinstance(handle, ctypes.c_void_p) else handle
        r, s = ctypes.c_int(), ctypes.c_int()
        check(lib.tutti_comm_rank(self._handle, ctypes.byref(r)), self._handle, "tutti_comm_rank")
        check(lib.tutti_comm_size(self._handle, ctypes.byref(s)), self._handle, "tutti_comm_size")
        self.rank, self.size = r.value, s.value
        # Live registered regions (mem_empty), which destroy frees with the communicator.
        self._regions = weakref.WeakSet()

    # ---- lifetime -------------------------------------------------------------------------
    def _h(self):
        if not self._handle:
            raise error_for(2, "communicator was destroyed")
        return self._handle

    def destroy(self):
        """Frees the communicator (never blocks on peers). Safe to call twice."""
        if self._handle:
            h, self._handle = self._handle, None
            for reg in list(self._regions):
                reg.ptr = None  # tutti_comm_destroy frees it
            rc = self._lib.tutti_comm_destroy(h)
            if rc != 0:
                check(rc, None, "tutti_comm_destroy")

    close = destroy

    def abort(self):
        """Fails every pending and future operation with AbortedError and tells the peers."""
        check(lib.tutti_comm_abort(self._h()), self._handle, "tutti_comm_abort")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def __del__(self):
        h, dll = getattr(self, "_handle", None), getattr(self, "_lib", None)
        if h and dll is not None:
            self._handle = None
            dll.tutti_comm_destroy(h)

    def shrink(self):
        """tutti_comm_shrink: after a failure, the live ranks that call it get a new
        Communicator of just them (ordered by their rank here). This one stays as it is."""
        new = ctypes.c_void_p()
        check(lib.tutti_comm_shrink(self._h(), ctypes.byref(new)), self._handle,
              "tutti_comm_shrink")
        return Communicator(new)

    def mem_empty(self, shape, dtype=np.float32):
        """An uninitialised array in registered memory (tutti_mem_alloc): a NumPy array, or a
        CPU torch tensor when dtype is a torch dtype. Collectives over buffers registered on
        every local rank let the single-copy algorithm read peers' buffers in place. Freed
        when the last reference goes; do not use it after this communicator is destroyed."""
        from ._registered import Region
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        n = 1
        for s in shape:
            n *= s
        if B.is_tensor_dtype(dtype):
            import torch
            size = torch.empty((), dtype=dtype).element_size()
            return Region(self, max(n * size, 1)).tensor(shape, dtype)
        size = np.dtype(dtype).itemsize
        return Region(self, max(n * size, 1)).numpy(shape, dtype)

    def set_timeout(self, seconds):
        """tutti_comm_set_timeout: the deadline, in seconds, of every later wait of this
        communicator's calls. Not while requests of it are in flight."""
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise bad_argument("set_timeout", "seconds must be a number, got %r"
                               % (seconds,)) from None
        check(lib.tutti_comm_set_timeout(self._h(), seconds), self._handle,
              "tutti_comm_set_timeout")

    @property
    def last_error(self):
        """The first error this communicator met, as the library's sentence ("" if none)."""
        if not self._handle:
            return ""
        raw = lib.tutti_comm_last_error(self._handle)
        return raw.decode(errors="replace") if raw else ""

    def __repr__(self):
        return "<tutti.Communicator rank %d of %d>" % (self.rank, self.size)

    def split(self, color, key=0):
        """MPI_Comm_split: a new Communicator per color, ordered by key; None for NOCOLOR."""
        new = ctypes.c_void_p()
        check(lib.tutti_comm_split(self._h(), int(color), int(key), ctypes.byref(new)),
              self._handle, "tutti_comm_split")
        return Communicator(new) if new.value else None

    def dup(self):
        new = ctypes.c_void_p()
        check(lib.tutti_comm_dup(self._h(), ctypes.byref(new)), self._handle, "tutti_comm_dup")
        return Communicator(new)

    def create_premul_sum(self, scalar, dtype):
        """ncclRedOpCreatePreMulSum: an op usable on this communicator with that dtype."""
        code = _dtype_code(dtype)
        data = ctypes.create_string_buffer(_scalar_bytes(scalar, code))
        op = ctypes.c_int()
        check(lib.tutti_op_create_premul_sum(ctypes.byref(op), data, code, self._h()),
              self._handle, "tutti_op_create_premul_sum")
        return PremulSumOp(self, op.value, code)

    # ---- plumbing -------------------------------------------------------------------------
    def _op(self, op):
        if isinstance(op, PremulSumOp):
            if op.value is None:
                raise bad_argument("op", "premul-sum operation was destroyed")
            return op.value
        if isinstance(op, str):
            try:
                return int(ReduceOp[op.upper()])
            except KeyError:
                raise bad_argument("op", "unknown reduction %r (sum, prod, min, max, avg, band, "
                                   "bor, bxor)" % op) from None
        if isinstance(op, int):
            return int(op)
        raise bad_argument("op", "expected a tutti.ReduceOp, got %r" % (op,))

    def _root(self, root, what):
        try:
            root = operator.index(root)
        except TypeError:
            raise bad_argument(what, "root must be an integer, got %r" % (root,)) from None
        if not 0 <= root < self.size:
            raise bad_argument(what, "root %r is not a rank of this communicator (size %d)"
                               % (root, self.size))
        return root

    def _run(self, name, args, keep, result, nonblocking, post=None):
        what = "tutti_" + name
        if nonblocking:
            req = ctypes.c_void_p()
            rc = getattr(lib, "tutti_i" + name)(*args, ctypes.byref(req))
            check(rc, self._handle, "tutti_i" + name)
            return Request(self, req.value, "tutti_i" + name, keep, result, post)
        rc = getattr(lib, what)(*args)
        check(rc, self._handle, what)
        g = _group_keep()
        if g is not None:
            g.append(keep)
        elif post is not None:
            post()
        return result

    @staticmethod
    def _ptr(b):
        return b.ptr if b is not None else None

    def _pair(self, sendbuf, recvbuf, what, need_reduce_type):
        s = B.wrap(sendbuf, what + " sendbuf")
        r = B.wrap(recvbuf, what + " recvbuf", writable=True) if recvbuf is not None else None
        if r is not None:
            B.same_type(s, r, what)
        if need_reduce_type:
            B.need_dtype(s, what)
        return s, r

    @staticmethod
    def _moving(s, r=None):
        """Data movement: the buffers' own type, or bytes when tutti has no such type."""
        if s.dtype is not None:
            return s, r, 1
        return s.as_bytes(), (r.as_bytes() if r is not None else None), s.itemsize

    # ---- collectives ----------------------------------------------------------------------
    def _allgather(self, sendbuf, recvbuf, nb):
        s, r = self._pair(sendbuf, recvbuf, "allgather", False)
        if r is None:
            recvbuf = B.empty_like(s, (self.size,) + tuple(s.shape))
            r = B.wrap(recvbuf, "allgather recvbuf", True)
        if r.count != s.count * self.size:
            raise bad_argument("allgather", "recvbuf has %d elements; needs size*sendcount = "
                               "%d*%d" % (r.count, self.size, s.count))
        s, r, _ = self._moving(s, r)
        return self._run("allgather", (s.ptr, r.ptr, s.count, s.dtype, self._h()), (s, r),
                         recvbuf, nb)

    def _allreduce(self, sendbuf, recvbuf, op, nb):
        s, r = self._pair(sendbuf, recvbuf, "allreduce", True)
        if r is None:
            recvbuf = B.empty_like(s, s.shape)
            r = B.wrap(recvbuf, "allreduce recvbuf", True)
        if r.count != s.count:
            raise bad_argument("allreduce", "recvbuf has %d elements, sendbuf %d"
                               % (r.count, s.count))
        return self._run("allreduce", (s.ptr, r.ptr, s.count, s.dtype, self._op(op), self._h()),
                         (s, r, op), recvbuf, nb)

    def _reduce_scatter(self, sendbuf, recvbuf, op, nb):
        s, r = self._pair(sendbuf, recvbuf, "reduce_scatter", True)
        if s.count % self.size:
            raise bad_argument("reduce_scatter", "sendbuf has %d elements, not a multiple of "
                               "size %d" % (s.count, self.size))
        n = s.count // self.size
        if r is None:
            shape = s.shape[1:] if s.shape and s.shape[0] == self.size else (n,)
            recvbuf = B.empty_like(s, shape)
            r = B.wrap(recvbuf, "reduce_scatter recvbuf", True)
        if r.count != n:
            raise bad_argument("reduce_scatter", "recvbuf has %d elements; needs sendcount/size"
                               " = %d" % (r.count, n))
        return self._run("reduce_scatter", (s.ptr, r.ptr, n, s.dtype, self._op(op), self._h()),
                         (s, r, op), recvbuf, nb)

    def _broadcast(self, sendbuf, recvbuf, root, nb):
        root = self._root(root, "broadcast")
        if recvbuf is None:
            recvbuf = sendbuf
        s, r = self._pair(sendbuf, recvbuf, "broadcast", False)
        r = B.wrap(recvbuf, "broadcast recvbuf", True)
        if r.count != s.count:
            raise bad_argument("broadcast", "recvbuf has %d elements, sendbuf %d"
                               % (r.count, s.count))
        s, r, _ = self._moving(s, r)
        return self._run("broadcast", (s.ptr, r.ptr, s.count, s.dtype, root, self._h()), (s, r),
                         recvbuf, nb)

    def _reduce(self, sendbuf, recvbuf, op, root, nb):
        root = self._root(root, "reduce")
        is_root = self.rank == root
        s, r = self._pair(sendbuf, recvbuf if is_root else None, "reduce", True)
        if is_root and r is None:
            recvbuf = B.empty_like(s, s.shape)
            r = B.wrap(recvbuf, "reduce recvbuf", True)
        if is_root and r.count != s.count:
            raise bad_argument("reduce", "recvbuf has %d elements, sendbuf %d"
                               % (r.count, s.count))
        return self._run("reduce", (s.ptr, self._ptr(r), s.count, s.dtype, self._op(op), root,
                                    self._h()), (s, r, op), recvbuf if is_root else None, nb)

    def _alltoall(self, sendbuf, recvbuf, nb):
        s, r = self._pair(sendbuf, recvbuf, "alltoall", False)
        if s.count % self.size:
            raise bad_argument("alltoall", "sendbuf has %d elements, not a multiple of size %d"
                               % (s.count, self.size))
        if r is None:
            recvbuf = B.empty_like(s, s.shape)
            r = B.wrap(recvbuf, "alltoall recvbuf", True)
        if r.count != s.count:
            raise bad_argument("alltoall", "recvbuf has %d elements, sendbuf %d"
                               % (r.count, s.count))
        s, r, _ = self._moving(s, r)
        return self._run("alltoall", (s.ptr, r.ptr, s.count // self.size, s.dtype, self._h()),
                         (s, r), recvbuf, nb)

    def _gather(self, sendbuf, recvbuf, root, nb):
        root = self._root(root, "gather")
        is_root = self.rank == root
        s, r = self._pair(sendbuf, recvbuf if is_root else None, "gather", False)
        if is_root:
            if r is None:
                recvbuf = B.empty_like(s, (self.size,) + tuple(s.shape))
                r = B.wrap(recvbuf, "gather recvbuf", True)
            if r.count != s.count * self.size:
                raise bad_argument("gather", "root's recvbuf has %d elements; needs "
                                   "size*count = %d*%d" % (r.count, self.size, s.count))
        s, r, _ = self._moving(s, r)
        return self._run("gather", (s.ptr, self._ptr(r), s.count, s.dtype, root, self._h()),
                         (s, r), recvbuf if is_root else None, nb)

    def _scatter(self, sendbuf, recvbuf, root, nb):
        root = self._root(root, "scatter")
        is_root = self.rank == root
        r = B.wrap(recvbuf, "scatter recvbuf", True)
        s = None
        if is_root:
            s = B.wrap(sendbuf, "scatter sendbuf")
            B.same_type(s, r, "scatter")
            if s.count != r.count * self.size:
                raise bad_argument("scatter", "root's sendbuf has %d elements; needs "
                                   "size*count = %d*%d" % (s.count, self.size, r.count))
        r, s, _ = self._moving(r, s)
        return self._run("scatter", (self._ptr(s), r.ptr, r.count, r.dtype, root, self._h()),
                         (s, r), recvbuf, nb)

    def _barrier(self, nb):
        return self._run("barrier", (self._h(),), (), None, nb)

    def _send(self, buf, peer, nb, tag=None):
        b = B.wrap(buf, "send buf")
        b, _, _ = self._moving(b)
        if tag is None:
            return self._run("send", (b.ptr, b.count, b.dtype, int(peer), self._h()), (b,),
                             None, nb)
        return self._run("send_tag", (b.ptr, b.count, b.dtype, int(peer), int(tag), self._h()),
                         (b,), None, nb)

    def _recv(self, buf, peer, nb, tag=None):
        b = B.wrap(buf, "recv buf", True)
        b, _, _ = self._moving(b)
        if tag is None and peer is not None and peer != ANY_SOURCE:
            return self._run("recv", (b.ptr, b.count, b.dtype, int(peer), self._h()), (b,),
                             buf, nb)
        peer = ANY_SOURCE if peer is None else int(peer)
        tag = ANY_TAG if tag is None else int(tag)
        if nb:
            return self._run("recv_tag", (b.ptr, b.count, b.dtype, peer, tag, self._h()), (b,),
                             buf, True)
        st = Status(-1, -1)
        rc = lib.tutti_recv_tag(b.ptr, b.count, b.dtype, peer, tag, self._h(), ctypes.byref(st))
        check(rc, self._handle, "tutti_recv_tag")
        return buf, st.source, st.tag

    # ---- variable-count collectives -------------------------------------------------------
    def _allgatherv(self, sendbuf, recvbuf, recvcounts, displs, nb):
        s, r = self._pair(sendbuf, recvbuf, "allgatherv", False)
        counts = [int(c) for c in recvcounts]
        displs = _prefix(counts) if displs is None else list(displs)
        if len(counts) == self.size and counts[self.rank] != s.count:
            raise bad_argument("allgatherv", "sendbuf has %d elements but recvcounts[%d] = %d"
                               % (s.count, self.rank, counts[self.rank]))
        if r is None:
            recvbuf = B.empty_like(s, (max([d + c for d, c in zip(displs, counts)] + [0]),))
            r = B.wrap(recvbuf, "allgatherv recvbuf", True)
        self._fits(r, counts, displs, "allgatherv recvbuf")
        s, r, k = self._moving(s, r)
        rc, rd = _sizes([c * k for c in counts], self.size, "allgatherv recvcounts"), \
            _sizes([d * k for d in displs], self.size, "allgatherv displs")
        return self._run("allgatherv", (s.ptr, s.count, r.ptr, rc, rd, s.dtype, self._h()),
                         (s, r, rc, rd), recvbuf, nb)

    def _fits(self, b, counts, displs, what):
        if len(counts) != self.size or len(displs) != self.size:
            raise bad_argument(what, "counts and displacements need %d entries each"
                               % self.size)
        end = max([int(d) + int(c) for d, c in zip(displs, counts)] + [0])
        if end > b.count:
            raise bad_argument(what, "has %d elements but counts/displacements reach %d"
                               % (b.count, end))

    def _reduce_scatterv(self, sendbuf, recvbuf, recvcounts, op, nb):
        s, r = self._pair(sendbuf, recvbuf, "reduce_scatterv", True)
        counts = _sizes(recvcounts, self.size, "reduce_scatterv recvcounts")
        if sum(counts) != s.count:
            raise bad_argument("reduce_scatterv", "sendbuf has %d elements, recvcounts sum to %d"
                               % (s.count, sum(counts)))
        if r is None:
            recvbuf = B.empty_like(s, (counts[self.rank],))
            r = B.wrap(recvbuf, "reduce_scatterv recvbuf", True)
        if r.count < counts[self.rank]:
            raise bad_argument("reduce_scatterv", "recvbuf has %d elements, recvcounts[%d] = %d"
                               % (r.count, self.rank, counts[self.rank]))
        return self._run("reduce_scatterv", (s.ptr, r.ptr, counts, s.dtype, self._op(op),
                                             self._h()), (s, r, counts, op), recvbuf, nb)

    def _gatherv(self, sendbuf, recvbuf, recvcounts, displs, root, nb):
        root = self._root(root, "gatherv")
        is_root = self.rank == root
        s, r = self._pair(sendbuf, recvbuf if is_root else None, "gatherv", False)
        rc = rd = None
        k = s.itemsize if s.dtype is None else 1
        if is_root:
            if recvcounts is None:
                raise bad_argument("gatherv", "the root needs recvcounts")
            counts = [int(c) for c in recvcounts]
            displs = _prefix(counts) if displs is None else list(displs)
            if r is None:
                recvbuf = B.empty_like(s, (max([d + c for d, c in zip(displs, counts)] + [0]),))
                r = B.wrap(recvbuf, "gatherv recvbuf", True)
            self._fits(r, counts, displs, "gatherv recvbuf")
            rc = _sizes([c * k for c in counts], self.size, "gatherv recvcounts")
            rd = _sizes([d * k for d in displs], self.size, "gatherv displs")
        s, r, _ = self._moving(s, r)
        return self._run("gatherv", (s.ptr, s.count, self._ptr(r), rc, rd, s.dtype, root,
                                     self._h()), (s, r, rc, rd),
                         recvbuf if is_root else None, nb)

    def _scatterv(self, sendbuf, sendcounts, displs, recvbuf, root, nb):
        root = self._root(root, "scatterv")
        is_root = self.rank == root
        r = B.wrap(recvbuf, "scatterv recvbuf", True)
        s = sc = sd = None
        k = r.itemsize if r.dtype is None else 1
        if is_root:
            s = B.wrap(sendbuf, "scatterv sendbuf")
            B.same_type(s, r, "scatterv")
            counts = [int(c) for c in sendcounts]
            displs = _prefix(counts) if displs is None else list(displs)
            self._fits(s, counts, displs, "scatterv sendbuf")
            sc = _sizes([c * k for c in counts], self.size, "scatterv sendcounts")
            sd = _sizes([d * k for d in displs], self.size, "scatterv displs")
        r, s, _ = self._moving(r, s)
        return self._run("scatterv", (self._ptr(s), sc, sd, r.ptr, r.count, r.dtype, root,
                                      self._h()), (s, r, sc, sd), recvbuf, nb)

    def _alltoallv(self, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, nb):
        s, r = self._pair(sendbuf, recvbuf, "alltoallv", False)
        scounts = [int(c) for c in sendcounts]
        rcounts = [int(c) for c in recvcounts]
        sdispls = _prefix(scounts) if sdispls is None else list(sdispls)
        rdispls = _prefix(rcounts) if rdispls is None else list(rdispls)
        self._fits(s, scounts, sdispls, "alltoallv sendbuf")
        if r is None:
            recvbuf = B.empty_like(s, (max([d + c for d, c in zip(rdispls, rcounts)] + [0]),))
            r = B.wrap(recvbuf, "alltoallv recvbuf", True)
        self._fits(r, rcounts, rdispls, "alltoallv recvbuf")
        s, r, k = self._moving(s, r)
        arrs = [_sizes([v * k for v in x], self.size, "alltoallv " + n) for x, n in
                ((scounts, "sendcounts"), (sdispls, "sdispls"), (rcounts, "recvcounts"),
                 (rdispls, "rdispls"))]
        return self._run("alltoallv", (s.ptr, arrs[0], arrs[1], r.ptr, arrs[2], arrs[3], s.dtype,
                                       self._h()), (s, r, arrs), recvbuf, nb)

    # ---- public names: blocking and non-blocking ------------------------------------------
    def allgather(self, sendbuf, recvbuf=None):
        """recvbuf (default: new, shape (size, *sendbuf.shape)) gets rank i's data at i."""
        return self._allgather(sendbuf, recvbuf, False)

    def iallgather(self, sendbuf, recvbuf=None):
        return self._allgather(sendbuf, recvbuf, True)

    def allreduce(self, sendbuf, recvbuf=None, op=ReduceOp.SUM):
        return self._allreduce(sendbuf, recvbuf, op, False)

    def iallreduce(self, sendbuf, recvbuf=None, op=ReduceOp.SUM):
        return self._allreduce(sendbuf, recvbuf, op, True)

    def reduce_scatter(self, sendbuf, recvbuf=None, op=ReduceOp.SUM):
        return self._reduce_scatter(sendbuf, recvbuf, op, False)

    def ireduce_scatter(self, sendbuf, recvbuf=None, op=ReduceOp.SUM):
        return self._reduce_scatter(sendbuf, recvbuf, op, True)

    def broadcast(self, sendbuf, recvbuf=None, root=0):
        """In place in sendbuf unless recvbuf is given; only the root's sendbuf is read."""
        return self._broadcast(sendbuf, recvbuf, root, False)

    def ibroadcast(self, sendbuf, recvbuf=None, root=0):
        return self._broadcast(sendbuf, recvbuf, root, True)

    def reduce(self, sendbuf, recvbuf=None, op=ReduceOp.SUM, root=0):
        """Returns the reduction on the root, None elsewhere."""
        return self._reduce(sendbuf, recvbuf, op, root, False)

    def ireduce(self, sendbuf, recvbuf=None, op=ReduceOp.SUM, root=0):
        return self._reduce(sendbuf, recvbuf, op, root, True)

    def barrier(self):
        return self._barrier(False)

    def ibarrier(self):
        return self._barrier(True)

    def alltoall(self, sendbuf, recvbuf=None):
        return self._alltoall(sendbuf, recvbuf, False)

    def ialltoall(self, sendbuf, recvbuf=None):
        return self._alltoall(sendbuf, recvbuf, True)

    def gather(self, sendbuf, recvbuf=None, root=0):
        return self._gather(sendbuf, recvbuf, root, False)

    def igather(self, sendbuf, recvbuf=None, root=0):
        return self._gather(sendbuf, recvbuf, root, True)

    def scatter(self, sendbuf, recvbuf, root=0):
        """recvbuf is required (it gives the count); sendbuf is read on the root only."""
        return self._scatter(sendbuf, recvbuf, root, False)

    def iscatter(self, sendbuf, recvbuf, root=0):
        return self._scatter(sendbuf, recvbuf, root, True)

    def send(self, buf, peer, tag=None):
        """Untagged (tag 0) unless tag is given (tutti_send_tag)."""
        return self._send(buf, peer, False, tag)

    def isend(self, buf, peer, tag=None):
        return self._send(buf, peer, True, tag)

    def recv(self, buf, peer, tag=None):
        """Receives from peer (tag 0, or tag if given); returns buf."""
        if peer is None or peer == ANY_SOURCE:
            raise bad_argument("recv", "peer must be a rank; use recv_from for any source")
        if tag is None:
            return self._recv(buf, peer, False)
        return self._recv(buf, peer, False, tag)[0]

    def recv_from(self, buf, peer=ANY_SOURCE, tag=ANY_TAG):
        """tutti_recv_tag: receives the first message from peer (default: any source) with
        tag (default: any); returns (buf, source, tag) of the message it matched."""
        return self._recv(buf, peer, False, tag)

    def irecv(self, buf, peer, tag=None):
        """A Request; peer None (or ANY_SOURCE) receives from any source. After wait(), its
        .source and .tag name the message it matched."""
        if tag is None and (peer is None or peer == ANY_SOURCE):
            tag = ANY_TAG
        return self._recv(buf, peer, True, tag)

    def allgatherv(self, sendbuf, recvbuf, recvcounts, displs=None):
        """displs default to the prefix sums of recvcounts; recvbuf None allocates."""
        return self._allgatherv(sendbuf, recvbuf, recvcounts, displs, False)

    def iallgatherv(self, sendbuf, recvbuf, recvcounts, displs=None):
        return self._allgatherv(sendbuf, recvbuf, recvcounts, displs, True)

    def reduce_scatterv(self, sendbuf, recvbuf, recvcounts, op=ReduceOp.SUM):
        return self._reduce_scatterv(sendbuf, recvbuf, recvcounts, op, False)

    def ireduce_scatterv(self, sendbuf, recvbuf, recvcounts, op=ReduceOp.SUM):
        return self._reduce_scatterv(sendbuf, recvbuf, recvcounts, op, True)

    def gatherv(self, sendbuf, recvbuf, recvcounts=None, displs=None, root=0):
        return self._gatherv(sendbuf, recvbuf, recvcounts, displs, root, False)

    def igatherv(self, sendbuf, recvbuf, recvcounts=None, displs=None, root=0):
        return self._gatherv(sendbuf, recvbuf, recvcounts, displs, root, True)

    def scatterv(self, sendbuf, sendcounts, displs, recvbuf, root=0):
        return self._scatterv(sendbuf, sendcounts, displs, recvbuf, root, False)

    def iscatterv(self, sendbuf, sendcounts, displs, recvbuf, root=0):
        return self._scatterv(sendbuf, sendcounts, displs, recvbuf, root, True)

    def alltoallv(self, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls):
        return self._alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, False)

    def ialltoallv(self, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls):
        return self._alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, True)
