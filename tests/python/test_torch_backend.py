"""torch.distributed backend "tutti": every c10d operation vs references and vs gloo,
async_op, new_group, non-contiguous tensors, bfloat16."""
from conftest import needs_torch, run_ranks

pytestmark = needs_torch


def test_every_operation_3_ranks():
    out, _, _ = run_ranks(3, "torch_ops.py", timeout=150)
    assert sorted(out) == [0, 1, 2]
    for r in range(3):
        assert out[r][-1].startswith("checked ") and int(out[r][-1].split()[1]) > 150, out[r]

