"""The tutti backend's inline and waiter-thread paths, and its copy-free list forms."""
from conftest import needs_torch, run_ranks

pytestmark = needs_torch


def test_inline_async_and_list_forms_three_ranks():
    out, _, _ = run_ranks(3, "torch_paths.py", timeout=120)
    assert sorted(out) == [0, 1, 2]
    for r in range(3):
        assert out[r][-1] == "ok", out
