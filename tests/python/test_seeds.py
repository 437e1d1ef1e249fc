"""The torch examples of seed 003 (all_gather), run with backend='tutti', print what the seed
says they print. The second one's expected output is recomputed here from torch's RNG."""
import os

from conftest import REPO, needs_torch, run_ranks

pytestmark = needs_torch
SEED = os.path.join(REPO, "examples", "seed")


def test_all_gather_of_ranks_prints_the_seed_line():
    out, _, _ = run_ranks(4, os.path.join(SEED, "all_gather_ranks.py"), timeout=90)
    assert out[0] == ["[tensor([0]), tensor([1]), tensor([2]), tensor([3])]"], out
    assert set(out) == {0}, "only rank 0 prints: %r" % out


def test_all_gather_of_random_tensors_matches_torch():
    import torch
    torch.manual_seed(42)
    base = torch.randn(2, 3)  # every rank draws the same numbers, then adds its rank
    want = []
    for i in range(4):
        want.append("Тензор от процесса %d:" % i)
        want.extend(str(base + i).splitlines())
    out, _, _ = run_ranks(4, os.path.join(SEED, "all_gather_random.py"), timeout=90)
    assert out[0] == want, "\n".join(out[0])
