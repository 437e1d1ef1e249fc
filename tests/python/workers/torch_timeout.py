"""timeout= of init_process_group and new_group is the communicator's deadline: with 1 s, a
barrier that rank 1 never enters fails on rank 0 within a few seconds, with "Timed out" in
the error (as torch's own backends say it). The store has its own, long timeout so that
start-up on a loaded machine is not what is timed.

Usage under tutti-run (2 ranks): torch_timeout.py PORT. Rank 0 prints "timed out in X s" per
group and "ok".
"""
import sys
import time
from datetime import timedelta

import torch.distributed as dist

import tutti.torch  # noqa: F401

R = int(__import__("os").environ["TUTTI_RANK"])
store = dist.TCPStore("127.0.0.1", int(sys.argv[1]), 2, R == 0, timeout=timedelta(seconds=120))
dist.init_process_group(backend="tutti", store=store, rank=R, world_size=2,
                        timeout=timedelta(seconds=1))


def barrier_times_out(group, what):
    t0 = time.monotonic()
    try:
        dist.barrier(group=group)
    except Exception as e:  # noqa: BLE001 - the text is what is checked
        took = time.monotonic() - t0
        if "Timed out" not in str(e):
            raise AssertionError("%s: the error lacks 'Timed out': %s" % (what, e))
        if took >= 8:
            raise AssertionError("%s: failed after %.1f s, not within a few seconds"
                                 % (what, took))
        print("%s timed out in %.1f s: %s" % (what, took, e))
        return
    raise AssertionError("%s: barrier returned though rank 1 never entered it" % what)


if R == 0:
    barrier_times_out(None, "init_process_group(timeout=1 s)")
g = dist.new_group([0, 1], timeout=timedelta(seconds=1))
if R == 0:
    barrier_times_out(g, "new_group(timeout=1 s)")
    store.set("done", "1")
else:
    store.get("done")  # stays alive (and out of both barriers) until rank 0 is done
print("ok")
