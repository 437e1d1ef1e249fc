"""A script that ends without dist.destroy_process_group(), as many do: it must exit
cleanly (no "Exception ignored in: ProcessGroupTutti.__del__" at interpreter exit).

Usage under tutti-run (2 ranks): torch_no_destroy.py.
"""
import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group(backend="tutti")
t = torch.ones(4)
dist.all_reduce(t)
w = dist.all_reduce(torch.ones(2), async_op=True)  # the waiter thread is running, too
w.wait()
g = dist.new_group([0, 1])
dist.all_reduce(t, group=g)
assert torch.equal(t, torch.full((4,), 4.0)), t
print("ok")
