"""Inputs every rank can recompute for every other rank, and NumPy references over them."""
import functools

import numpy as np

OPS = ["sum", "prod", "min", "max", "avg", "band", "bor", "bxor"]
INT_TYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]
FLOAT_TYPES = ["float16", "float32", "float64"]


def value_range(op, dtype):
    """Small values: every reduction stays exact and in range for every dtype and n <= 4."""
    unsigned = dtype.startswith("uint")
    if op == "prod":
        return (1, 4)
    if op in ("band", "bor", "bxor"):
        return (0, 128)
    if op in ("min", "max"):
        return (0, 100) if unsigned else (-50, 50)
    return (0, 6) if unsigned else (-5, 6)


def data(rank, count, op="sum", dtype="float32", salt=0):
    """Rank `rank`'s input as float64 holding integers (exactly representable in any dtype)."""
    lo, hi = value_range(op, dtype)
    rng = np.random.default_rng(7919 * rank + 104729 * count + salt)
    return rng.integers(lo, hi, count).astype(np.float64)


def reduce_ref(arrays, op, dtype):
    """The reduction of arrays (float64 holding ints) as tutti defines it, in float64."""
    a = np.stack(arrays)
    n = len(arrays)
    if op == "sum":
        return a.sum(0)
    if op == "prod":
        return a.prod(0)
    if op == "min":
        return a.min(0)
    if op == "max":
        return a.max(0)
    if op == "avg":
        q = a.sum(0) / n
        return np.fix(q) if not dtype.startswith("float") and dtype != "bfloat16" else q
    ints = a.astype(np.int64)
    f = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}[op]
    return functools.reduce(f, list(ints)).astype(np.float64)


def valid(op, dtype):
    return not (op in ("band", "bor", "bxor") and (dtype.startswith("float") or
                                                   dtype == "bfloat16"))


def v_counts(n):
    """Uneven per-rank counts including a zero: (i + 2) % 3."""
    return [(i + 2) % 3 for i in range(n)]


def pair_count(src, dst):
    """alltoallv: elements rank src sends to rank dst."""
    return (src + 2 * dst) % 3
