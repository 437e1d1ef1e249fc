"""async_op=True overlaps with compute, and Work.wait() raises the library's error; new_group
of one rank and of all ranks.
"""
import torch
import torch.distributed as dist

import tutti
import tutti.torch  # noqa: F401

dist.init_process_group(backend="tutti")
R, N = dist.get_rank(), dist.get_world_size()

big = torch.full((1 << 20,), float(R + 1))
w = dist.all_reduce(big, async_op=True)
local = torch.ones(256, 256) @ torch.ones(256, 256)  # work while the reduction runs
w.wait()
assert w.is_completed() and w.is_success()
assert torch.equal(big, torch.full((1 << 20,), float(N * (N + 1) // 2))), big[:4]
assert local[0, 0].item() == 256

fut_work = dist.all_gather_into_tensor(torch.empty(N * 3), torch.full((3,), float(R)),
                                       async_op=True)
fut = fut_work.get_future()
res = fut.wait()
assert torch.equal(res[0], torch.arange(N, dtype=torch.float32).repeat_interleave(3)), res

# A failing asynchronous call: bitwise AND of floats. wait() raises tutti's message.
try:
    dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND, async_op=True).wait()
except tutti.InvalidArgumentError as e:
    assert "band" in str(e), str(e)
except RuntimeError as e:  # torch may rewrap it
    assert "band" in str(e), str(e)
else:
    raise AssertionError("bitwise AND of floats was accepted")

solo = [dist.new_group([r]) for r in range(N)]  # every rank creates every group, in order
t = torch.tensor([float(R)])
dist.all_reduce(t, group=solo[R])
assert t.item() == float(R)
everyone = dist.new_group(list(range(N)))
t = torch.tensor([1.0])
dist.all_reduce(t, group=everyone)
assert t.item() == float(N)
# Importing again (reload) must not register the backend twice (register_backend asserts).
import importlib  # noqa: E402
importlib.reload(tutti.torch)
assert dist.Backend("tutti") == "tutti" and "TUTTI" in dist.Backend._plugins
dist.destroy_process_group()
print("ok")
