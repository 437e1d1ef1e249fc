"""Turns NumPy arrays and CPU torch tensors into (pointer, element count, tutti dtype).

torch is imported only when a tensor is actually passed, so NumPy-only users never load it.
"""
import sys

import numpy as np

from .errors import bad_argument

INT8, UINT8, INT32, UINT32, INT64, UINT64 = 0, 1, 2, 3, 4, 5
FLOAT16, BFLOAT16, FLOAT32, FLOAT64, FLOAT8_E4M3, FLOAT8_E5M2 = 6, 7, 8, 9, 10, 11
INT16, UINT16 = 12, 13

DTYPE_NAMES = {INT8: "int8", UINT8: "uint8", INT32: "int32", UINT32: "uint32", INT64: "int64",
               UINT64: "uint64", FLOAT16: "float16", BFLOAT16: "bfloat16",
               FLOAT32: "float32", FLOAT64: "float64", FLOAT8_E4M3: "float8_e4m3",
               FLOAT8_E5M2: "float8_e5m2", INT16: "int16", UINT16: "uint16"}

_NUMPY = {np.dtype(np.int8): INT8, np.dtype(np.uint8): UINT8, np.dtype(np.int32): INT32,
          np.dtype(np.uint32): UINT32, np.dtype(np.int64): INT64, np.dtype(np.uint64): UINT64,
          np.dtype(np.float16): FLOAT16, np.dtype(np.float32): FLOAT32,
          np.dtype(np.float64): FLOAT64, np.dtype(np.int16): INT16,
          np.dtype(np.uint16): UINT16}

_torch_map = None


def _torch_dtypes():
    global _torch_map
    if _torch_map is None:
        import torch
        m = {torch.int8: INT8, torch.uint8: UINT8, torch.int16: INT16, torch.int32: INT32,
             torch.int64: INT64,
             torch.float16: FLOAT16, torch.bfloat16: BFLOAT16, torch.float32: FLOAT32,
             torch.float64: FLOAT64}
        for name, code in (("uint16", UINT16), ("uint32", UINT32), ("uint64", UINT64),
                           ("float8_e4m3fn", FLOAT8_E4M3), ("float8_e5m2", FLOAT8_E5M2)):
            if hasattr(torch, name):
                m[getattr(torch, name)] = code
        _torch_map = m
    return _torch_map


def is_tensor(obj):
    # Only consult torch if it is already loaded: a tensor cannot exist otherwise.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


class Buf:
    """A checked view of one buffer: ptr (int), count (elements), dtype (tutti code or None
    when the element type has no tutti equivalent), itemsize, shape, and the object itself."""

    __slots__ = ("obj", "ptr", "count", "dtype", "itemsize", "shape", "kind")

    def as_bytes(self):
        """The same memory as UINT8 elements: data movement needs no element type."""
        b = Buf()
        b.obj, b.ptr, b.kind, b.shape = self.obj, self.ptr, self.kind, self.shape
        b.count, b.dtype, b.itemsize = self.count * self.itemsize, UINT8, 1
        return b


def wrap(obj, what, writable=False):
    """Checks obj (array or tensor: contiguous, on the CPU, writable if written) and returns a
    Buf. Raises InvalidArgumentError naming `what` otherwise."""
    b = Buf()
    b.obj = obj
    if isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise bad_argument(what, "NumPy array is not C-contiguous (use np.ascontiguousarray)")
        if writable and not obj.flags.writeable:
            raise bad_argument(what, "NumPy array is read-only but this call writes it")
        b.kind = "numpy"
        b.ptr = obj.ctypes.data
        b.count = obj.size
        b.itemsize = obj.itemsize
        b.shape = obj.shape
        b.dtype = _NUMPY.get(obj.dtype)
        return b
    if is_tensor(obj):
        if obj.device.type != "cpu":
            raise bad_argument(what, "tensor is on %s; tutti handles CPU tensors only"
                               % obj.device)
        if not obj.is_contiguous():
            raise bad_argument(what, "tensor is not contiguous (use .contiguous())")
        if obj.is_sparse or obj.is_quantized:
            raise bad_argument(what, "sparse and quantized tensors are not supported")
        b.kind = "torch"
        b.ptr = obj.data_ptr()
        b.count = obj.numel()
        b.itemsize = obj.element_size()
        b.shape = tuple(obj.shape)
        b.dtype = _torch_dtypes().get(obj.dtype)
        return b
    raise bad_argument(what, "expected a NumPy array or a CPU torch tensor, got %s"
                       % type(obj).__name__)


def need_dtype(b, what):
    if b.dtype is None:
        raise bad_argument(what, "element type %s has no tutti equivalent"
                           % getattr(b.obj, "dtype", "?"))
    return b.dtype


def same_type(a, b, what):
    """a and b must hold the same element type."""
    if a.kind != b.kind or a.obj.dtype != b.obj.dtype:
        raise bad_argument(what, "sendbuf and recvbuf differ in element type (%s vs %s)"
                           % (a.obj.dtype, b.obj.dtype))


def empty_like(b, shape):
    """A new, uninitialised buffer of b's kind and element type with the given shape."""
    if b.kind == "numpy":
        return np.empty(shape, dtype=b.obj.dtype)
    import torch
    return torch.empty(shape, dtype=b.obj.dtype)


def is_tensor_dtype(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.dtype)
