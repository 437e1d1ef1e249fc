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
    init = torch.nn.Linear(8, 32)  # the training must have moved the weights at all
    for k in a:
        assert torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6), (k, (a[k] - b[k]).abs().max())
    assert not torch.allclose(a["0.bias"], torch.zeros_like(a["0.bias"]))
    del init
