"""DistributedDataParallel on CPU with a backend chosen on the command line.

    PYTHONPATH=bindings/python build/bin/tutti-run -n 2 /usr/bin/python3 \
        examples/ddp_train.py --backend tutti --steps 20 --save /tmp/tutti.pt

Every rank builds the same model (same seed) and trains on its own batches (seeded by rank);
DDP averages the gradients. With --save, rank 0 writes the final parameters, so runs with
--backend tutti and --backend gloo can be compared (tests/python/test_ddp.py does).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="tutti", help="tutti or gloo")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--save", help="rank 0 writes the final state_dict here")
    args = p.parse_args()

    if args.backend == "tutti":
        import tutti.torch  # noqa: F401  (registers the backend)
    dist.init_process_group(backend=args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(args.seed + 1 + rank)
    target_w = torch.randn(8, 4, generator=torch.Generator().manual_seed(args.seed - 1))

    for step in range(args.steps):
        x = torch.randn(args.batch, 8, generator=data)
        y = x @ target_w
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print("step %d loss %.6f" % (step, loss.item()), flush=True)

    if rank == 0 and args.save:
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, args.save)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("done: %s, %d ranks, %d steps (pid %d)" % (args.backend, world, args.steps,
                                                         os.getpid()))


if __name__ == "__main__":
    main()
