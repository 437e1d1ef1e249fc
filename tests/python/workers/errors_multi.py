"""Errors that need peers: ranks disagreeing on a call, an aborted communicator, a dead peer.

Usage under tutti-run: errors_multi.py mismatch|abort|peer_dies.
"""
import os
import sys
import time

import numpy as np

import tutti

case = sys.argv[1]
comm = tutti.init_env()
R, N = comm.rank, comm.size

if case == "mismatch":
    # Rank 0 reduces 4 elements, the others 5: the contract check must refuse it on every rank.
    try:
        comm.allreduce(np.ones(4 if R == 0 else 5, np.float32))
    except tutti.InvalidUsageError as e:
        assert e.code == 2 and "tutti_allreduce" in str(e), str(e)
        assert comm.last_error and comm.last_error == e.message, (comm.last_error, e.message)
        print("InvalidUsageError:", e)
    else:
        raise AssertionError("mismatched counts were accepted")
elif case == "abort":
    if R == 0:
        comm.abort()
        try:
            comm.allreduce(np.ones(3))
        except tutti.AbortedError as e:
            print("AbortedError:", e)
        else:
            raise AssertionError("an aborted communicator still worked")
    else:
        # The peers learn of the abort; their next collective fails instead of hanging.
        try:
            comm.allreduce(np.ones(3))
        except (tutti.AbortedError, tutti.RemoteError) as e:
            print("%s: %s" % (type(e).__name__, e))
        else:
            raise AssertionError("peer of an aborted communicator completed a collective")
elif case == "peer_dies":
    comm.barrier()
    if R == 1:
        os._exit(0)  # no goodbye: the socket or shared memory peer just vanishes
    time.sleep(0.5)
    t0 = time.monotonic()
    try:
        comm.allreduce(np.ones(1 << 16, np.float32))
    except tutti.Error as e:
        assert isinstance(e, (tutti.RemoteError, tutti.TimeoutExpiredError)), repr(e)
        print("%s after %.1fs: %s" % (type(e).__name__, time.monotonic() - t0, e))
    else:
        raise AssertionError("all-reduce with a dead peer succeeded")
print("ok")
