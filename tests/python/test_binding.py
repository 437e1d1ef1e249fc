"""The NumPy/torch binding: every operation and dtype against a NumPy reference."""
from conftest import needs_torch, run_ranks


def _all_ok(out, n):
    assert sorted(out) == list(range(n)), out
    for r in range(n):
        assert out[r][-1].startswith("checked "), out[r]
        assert int(out[r][-1].split()[1]) > 100, out[r]


def test_numpy_every_op_and_dtype_3_ranks():
    out, _, _ = run_ranks(3, "binding_ops.py", "numpy")
    _all_ok(out, 3)


def test_numpy_every_op_and_dtype_4_ranks_tcp():
    out, _, _ = run_ranks(4, "binding_ops.py", "numpy", extra_env={"TUTTI_TRANSPORT": "tcp"})
    _all_ok(out, 4)


@needs_torch
def test_torch_tensors_every_op_and_dtype_2_ranks():
    out, _, _ = run_ranks(2, "binding_ops.py", "torch")
    _all_ok(out, 2)
