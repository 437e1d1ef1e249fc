"""torch Work objects for the tutti backend, and the cheap description of a plain tensor.

A Work is either already complete (the operation ran inline, with tutti's blocking call) or
completed later by the process group's waiter thread, which waits for tutti's requests in issue
order (the order tutti completes them on one communicator).
"""
import queue
import threading

import torch
from torch._C._distributed_c10d import _create_work_from_future

from . import _buffers as B

# torch.dtype -> (tutti dtype code or None, bytes per element); filled on first sight.
_DTYPES = {}


def plain(t):
    """(ptr, count, tutti dtype or None, itemsize) for a dense, contiguous CPU tensor; None for
    anything else (the Communicator path then handles it or says what is wrong)."""
    if not (t.is_cpu and t.layout is torch.strided and t.is_contiguous()) or t.is_quantized:
        return None
    d = _DTYPES.get(t.dtype)
    if d is None:
        d = _DTYPES[t.dtype] = (B._torch_dtypes().get(t.dtype), t.element_size())
    return t.data_ptr(), t.numel(), d[0], d[1]


def moving(d):
    """(ptr, count, dtype) for data movement: bytes where tutti has no name for the type."""
    ptr, n, code, size = d
    return (ptr, n, code) if code is not None else (ptr, n * size, B.UINT8)


def back_to_back(ds):
    """True when the described tensors (one size each) lie one after another in list order,
    so that one pointer and count cover them all without a copy."""
    step = ds[0][1] * ds[0][3]
    base = ds[0][0]
    return all(d[0] == base + i * step for i, d in enumerate(ds))


def overlaps(a_ptr, a_bytes, b_ptr, b_bytes):
    return a_ptr < b_ptr + b_bytes and b_ptr < a_ptr + a_bytes


def completed(result):
    """A Work that is already done with `result` (the operation ran inline)."""
    fut = torch._C.Future([])
    fut.set_result(result)
    return _create_work_from_future(fut)


class _Failed:
    """The value the waiter thread gives a request that failed: the Work's future raises it."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


def _unwrap(fut):
    v = fut.value()
    if isinstance(v, _Failed):
        raise v.error
    return v


class Waiter:
    """Completes the futures of one process group, in the order the operations were issued."""

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        # Each counter is written by one thread only (submit: the issuing thread; done: the
        # waiter), so idle() needs no lock.
        self._submitted = 0
        self._done = 0

    def idle(self):
        """True when every submitted request has finished (nothing queued in tutti before the
        next call of this group)."""
        return self._submitted == self._done

    def submit(self, requests, post, result):
        # The Work wraps a future chained on `src` through _unwrap: an exception raised there
        # marks it failed in C++ (is_success() false, get_future().wait() raises, DDP sees
        # it), where Future.set_exception would only store the exception as its value.
        src = torch._C.Future([])
        work = _create_work_from_future(src.then(_unwrap))
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tutti-torch-waiter",
                                            daemon=True)
            self._thread.start()
        self._submitted += 1
        self._q.put((requests, post, result, src))
        return work

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
                self._done += 1
                fut.set_result(_Failed(e))
            else:
                self._done += 1
                fut.set_result(result)

    def stop(self):
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._thread = None
