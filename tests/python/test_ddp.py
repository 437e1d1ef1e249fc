"""DistributedDataParallel: parameters after N steps with backend tutti equal gloo's."""
import os

from conftest import REPO, needs_torch, run_ranks

pytestmark = needs_torch
EXAMPLE = os.path.join(REPO, "examples", "ddp_train.py")


def test_ddp_parameters_match_gloo(tmp_path):
    import torch
    saved = {}
    for backend in ("tutti", "gloo"):
        path = tmp_path / ("%s.pt" % backend)
        out, _, _ = run_ranks(3, EXAMPLE, "--backend", backend, "--steps", "25", "--save",
                              str(path), timeout=150)
        assert out[0][-1].startswith("done: %s, 3 ranks, 25 steps" % backend), out
        saved[backend] = torch.load(str(path))
    a, b = saved["tutti"], saved["gloo"]
    assert a.keys() == b.keys() and len(a) == 4
    for k in a:
        assert torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6), (k, (a[k] - b[k]).abs().max())
    # the runs must have trained at all: parameters moved away from the seeded start
    torch.manual_seed(1234)
    start = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 4)).state_dict()
    assert all((a[k] - start[k]).abs().max() > 1e-3 for k in a)
