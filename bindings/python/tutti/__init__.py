"""tutti: collective communication for CPU processes (shared memory and TCP), from Python.

    import numpy as np, tutti
    comm = tutti.init_env()            # under tutti-run, torchrun, mpirun or srun
    out = comm.allreduce(np.arange(4.0))

Works on NumPy arrays and contiguous CPU torch tensors (bfloat16 included). ``import
tutti.torch`` registers the torch.distributed backend "tutti".
"""
from ._buffers import (BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2, FLOAT16, FLOAT32, FLOAT64, INT8,
                       INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64)
from ._lib import ANY_SOURCE, ANY_TAG, UNIQUE_ID_BYTES
from .communicator import (SPLIT_NOCOLOR, Communicator, PremulSumOp, ReduceOp, Request,
                           get_unique_id, group, group_end, group_start, init, init_env)
from .errors import (AbortedError, Error, InternalError, InvalidArgumentError,
                     InvalidUsageError, RemoteError, SystemCallError, TimeoutExpiredError,
                     result_string)

SUM, PROD, MIN, MAX, AVG = ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG
BAND, BOR, BXOR = ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR

__version__ = "0.1.0"
__all__ = ["Communicator", "Request", "PremulSumOp", "ReduceOp", "init", "init_env",
           "get_unique_id", "group", "group_start", "group_end", "result_string",
           "Error", "InvalidArgumentError", "InvalidUsageError", "SystemCallError", "RemoteError",
           "TimeoutExpiredError", "AbortedError", "InternalError", "UNIQUE_ID_BYTES",
           "SPLIT_NOCOLOR", "SUM", "PROD", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "INT8",
           "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16", "FLOAT32",
           "FLOAT64", "FLOAT8_E4M3", "FLOAT8_E5M2", "INT16", "UINT16", "ANY_SOURCE", "ANY_TAG"]
