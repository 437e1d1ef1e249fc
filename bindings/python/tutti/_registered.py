"""Registered memory (tutti_mem_alloc) as NumPy arrays and CPU torch tensors.

A collective whose buffers lie in registered memory on every local rank lets the single-copy
algorithm read and write peers' buffers in place with memcpy, instead of process_vm_readv into
a landing buffer (docs/operations.md). A Region frees its memory when the last array or tensor
made from it goes away; the communicator's destroy frees every region of it at once, so such
arrays must not be used after it (as with ncclMemAlloc).
"""
import ctypes
import threading

import numpy as np

from ._lib import lib
from .errors import check


class Region:
    """One tutti_mem_alloc allocation of comm: ptr, nbytes, and a ctypes buffer over it that
    the arrays and tensors made from it keep alive (it holds the Region in turn)."""

    __slots__ = ("comm", "ptr", "nbytes", "buffer", "__weakref__")

    def __init__(self, comm, nbytes):
        p = ctypes.c_void_p()
        check(lib.tutti_mem_alloc(comm._h(), nbytes, ctypes.byref(p)), comm._handle,
              "tutti_mem_alloc")
        self.comm, self.ptr, self.nbytes = comm, p.value, nbytes
        buf = (ctypes.c_uint8 * nbytes).from_address(p.value)
        # The buffer is what NumPy and torch hold on to; through it, this Region (and with it
        # the memory) lives as long as any array over it.
        buf._tutti_region = self
        self.buffer = buf
        comm._regions.add(self)

    def free(self):
        """Gives the memory back now, unless the communicator already did (destroy)."""
        ptr, self.ptr = self.ptr, None
        c = self.comm
        if ptr and c._handle:
            c._regions.discard(self)
            check(c._lib.tutti_mem_free(c._handle, ptr), c._handle, "tutti_mem_free")

    def __del__(self):
        try:
            self.free()
        except Exception:  # a finaliser must not raise; the communicator frees it anyway
            pass

    def numpy(self, shape, dtype):
        n = int(np.prod(shape, dtype=np.int64)) if shape != () else 1
        return np.frombuffer(self.buffer, dtype=dtype, count=n).reshape(shape)

    def tensor(self, shape, dtype):
        import torch
        n = 1
        for s in shape:
            n *= int(s)
        return torch.frombuffer(self.buffer, dtype=dtype, count=n).view(tuple(shape))


class StagingPool:
    """Registered buffers for a torch process group's own staging (gathers into lists,
    concatenated inputs): taken for one operation and given back when it completes, so the
    memory is allocated once per size and the peers' single-copy reads of it go in place.
    Thread-safe: the waiter thread gives buffers back. At most `keep` idle regions are kept
    (the largest ones); a region of a failed operation is simply dropped and freed."""

    def __init__(self, comm, keep=4):
        self._comm, self._keep = comm, keep
        self._idle = []  # Regions, not in use
        self._lock = threading.Lock()

    def take(self, nbytes):
        """A Region of at least nbytes (power-of-two sizes from 64 KiB, so that sizes that vary
        a little reuse one region)."""
        with self._lock:
            fit = [r for r in self._idle if r.nbytes >= nbytes]
            if fit:
                r = min(fit, key=lambda r: r.nbytes)
                self._idle.remove(r)
                return r
        size = 64 << 10
        while size < nbytes:
            size <<= 1
        return Region(self._comm, size)

    def give(self, region):
        with self._lock:
            if region.ptr is None:
                return
            self._idle.append(region)
            self._idle.sort(key=lambda r: r.nbytes, reverse=True)
            drop = self._idle[self._keep:]
            del self._idle[self._keep:]
        for r in drop:
            r.free()

    def clear(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for r in idle:
            r.free()
