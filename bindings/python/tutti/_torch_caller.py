"""Tells the torch backend whether whoever called a ProcessGroup method will wait at once.

torch.distributed's own functions (all_reduce, broadcast, ...) call the process group, then
either return the Work (async_op=True, isend, irecv) or wait for it on the next line
(async_op=False, send, recv). When they will wait, running tutti's blocking call inline and
returning a completed Work is exactly equivalent to starting a request and waiting, and saves
the hand-off to the waiter thread (hundreds of microseconds on a busy machine). The answer is
read from the calling Python frame: the torch.distributed function's code object, and its
async_op argument. Any other caller (DDP's C++ reducer, user code calling the group directly)
is "unknown" and the backend decides by size.
"""
import inspect
import types

import torch.distributed.distributed_c10d as _c10d

WAITS, RETURNS_WORK, UNKNOWN = 1, 0, None

# code object -> WAITS / RETURNS_WORK, or "flag": the answer is the frame's async_op.
_CODES = {}


def _learn():
    for name, fn in list(vars(_c10d).items()):
        # type(), not isinstance(): the deprecated reduce_op object warns on attribute access
        if type(fn) is not types.FunctionType or fn.__module__ != _c10d.__name__:
            continue  # imported from elsewhere, not one of torch.distributed's own calls
        code = inspect.unwrap(fn).__code__
        if "async_op" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            _CODES[code] = "flag"
        elif name in ("send", "recv"):
            _CODES[code] = WAITS
        elif name in ("isend", "irecv"):
            _CODES[code] = RETURNS_WORK


_learn()


def caller_waits(frame):
    """WAITS if frame (the ProcessGroup method's caller, may be None) is a torch.distributed
    function that waits for the Work it gets, RETURNS_WORK if it hands the Work to its own
    caller, UNKNOWN otherwise."""
    if frame is None:
        return UNKNOWN
    kind = _CODES.get(frame.f_code)
    if kind != "flag":
        return kind
    async_op = frame.f_locals.get("async_op")
    if async_op is None:
        return UNKNOWN
    return RETURNS_WORK if async_op else WAITS
