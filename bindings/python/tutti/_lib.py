"""Finds libtutti.so and declares the C signatures of include/tutti.h for ctypes.

Lookup order: $TUTTI_LIBRARY; the build tree next to this package
(bindings/python/tutti -> ../../../build/lib/libtutti.so); an installed package's libdir
(recorded by the install rules in _installed.py); the system (ctypes.util and the
dynamic loader's default path, e.g. an installed prefix in LD_LIBRARY_PATH or ld.so.conf).
"""
import ctypes
import ctypes.util
import os

UNIQUE_ID_BYTES = 128


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class Status(ctypes.Structure):
    """tutti_status_t: who sent the message a receive matched, and its tag."""
    _fields_ = [("source", ctypes.c_int), ("tag", ctypes.c_int)]


ANY_SOURCE = -1
ANY_TAG = -1


_comm = ctypes.c_void_p
_req = ctypes.c_void_p
_ptr = ctypes.c_void_p
_size = ctypes.c_size_t
_sizes = ctypes.POINTER(ctypes.c_size_t)
_int = ctypes.c_int
_res = ctypes.c_int
_preq = ctypes.POINTER(ctypes.c_void_p)

# name: argument types (all return tutti_result_t unless listed in _RESTYPES).
_SIGNATURES = {
    "tutti_get_unique_id": [ctypes.POINTER(UniqueId)],
    "tutti_comm_init_rank": [ctypes.POINTER(_comm), _int, ctypes.POINTER(UniqueId), _int],
    "tutti_comm_init_env": [ctypes.POINTER(_comm)],
    "tutti_comm_destroy": [_comm],
    "tutti_comm_abort": [_comm],
    "tutti_comm_rank": [_comm, ctypes.POINTER(_int)],
    "tutti_comm_size": [_comm, ctypes.POINTER(_int)],
    "tutti_result_string": [_res],
    "tutti_comm_last_error": [_comm],
    "tutti_allgather": [_ptr, _ptr, _size, _int, _comm],
    "tutti_allreduce": [_ptr, _ptr, _size, _int, _int, _comm],
    "tutti_reduce_scatter": [_ptr, _ptr, _size, _int, _int, _comm],
    "tutti_broadcast": [_ptr, _ptr, _size, _int, _int, _comm],
    "tutti_reduce": [_ptr, _ptr, _size, _int, _int, _int, _comm],
    "tutti_barrier": [_comm],
    "tutti_allgatherv": [_ptr, _size, _ptr, _sizes, _sizes, _int, _comm],
    "tutti_reduce_scatterv": [_ptr, _ptr, _sizes, _int, _int, _comm],
    "tutti_gatherv": [_ptr, _size, _ptr, _sizes, _sizes, _int, _int, _comm],
    "tutti_scatterv": [_ptr, _sizes, _sizes, _ptr, _size, _int, _int, _comm],
    "tutti_alltoallv": [_ptr, _sizes, _sizes, _ptr, _sizes, _sizes, _int, _comm],
    "tutti_alltoall": [_ptr, _ptr, _size, _int, _comm],
    "tutti_gather": [_ptr, _ptr, _size, _int, _int, _comm],
    "tutti_scatter": [_ptr, _ptr, _size, _int, _int, _comm],
    "tutti_send": [_ptr, _size, _int, _int, _comm],
    "tutti_recv": [_ptr, _size, _int, _int, _comm],
    "tutti_wait": [_req],
    "tutti_test": [_req, ctypes.POINTER(_int)],
    "tutti_request_free": [_req],
    "tutti_group_start": [],
    "tutti_group_end": [],
    "tutti_comm_split": [_comm, _int, _int, ctypes.POINTER(_comm)],
    "tutti_comm_dup": [_comm, ctypes.POINTER(_comm)],
    "tutti_op_create_premul_sum": [ctypes.POINTER(_int), _ptr, _int, _comm],
    "tutti_op_destroy": [_int, _comm],
    "tutti_send_tag": [_ptr, _size, _int, _int, _int, _comm],
    "tutti_recv_tag": [_ptr, _size, _int, _int, _int, _comm, ctypes.POINTER(Status)],
    "tutti_isend_tag": [_ptr, _size, _int, _int, _int, _comm, _preq],
    "tutti_irecv_tag": [_ptr, _size, _int, _int, _int, _comm, _preq],
    "tutti_request_status": [_req, ctypes.POINTER(Status)],
    "tutti_last_init_error": [],
    "tutti_comm_shrink": [_comm, ctypes.POINTER(_comm)],
    "tutti_comm_set_timeout": [_comm, ctypes.c_double],
    "tutti_mem_alloc": [_comm, _size, ctypes.POINTER(_ptr)],
    "tutti_mem_free": [_comm, _ptr],
}
# Every blocking collective above has a non-blocking twin taking a trailing tutti_request_t *.
for _name in ["allgather", "allreduce", "reduce_scatter", "broadcast", "reduce", "barrier",
              "allgatherv", "reduce_scatterv", "gatherv", "scatterv", "alltoallv", "alltoall",
              "gather", "scatter", "send", "recv"]:
    _SIGNATURES["tutti_i" + _name] = _SIGNATURES["tutti_" + _name] + [_preq]

_RESTYPES = {"tutti_result_string": ctypes.c_char_p, "tutti_comm_last_error": ctypes.c_char_p,
             "tutti_last_init_error": ctypes.c_char_p}


def _candidates():
    env = os.environ.get("TUTTI_LIBRARY")
    if env:
        yield env
        return  # an explicit choice that fails should fail, not fall back silently
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.normpath(os.path.join(here, "..", "..", "..", "build", "lib", "libtutti.so"))
    try:  # an installed package: the install rules record where the library went
        from ._installed import LIBDIR_FROM_PACKAGE
        yield os.path.normpath(os.path.join(here, LIBDIR_FROM_PACKAGE, "libtutti.so.0"))
    except ImportError:
        pass
    found = ctypes.util.find_library("tutti")
    if found:
        yield found
    yield "libtutti.so.0"
    yield "libtutti.so"


def _load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append("%s: no such file" % path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("tutti: cannot load libtutti.so (set TUTTI_LIBRARY to its path, or build "
                      "the tree with `make`); tried: " + "; ".join(errors))


lib = _load()
for _name, _args in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = _RESTYPES.get(_name, _res)
