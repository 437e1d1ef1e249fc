"""async_op=True and new_group with the tutti backend, on their own (2 ranks, small)."""
from conftest import needs_torch, run_ranks

pytestmark = needs_torch


def test_async_and_new_group_two_ranks():
    out, _, _ = run_ranks(2, "torch_async_groups.py", timeout=90)
    for r in range(2):
        assert out[r][-1] == "ok", out
