"""The tutti backend's registered staging buffers (tutti_mem_alloc) and Communicator.mem_empty."""
import pytest

from conftest import needs_torch, run_ranks

pytestmark = needs_torch

# A small single-copy chunk, so that a few thousand elements cross several chunk boundaries.
CHUNK_BYTES = 4096


@pytest.mark.parametrize("n", [2, 3, 4])
def test_staging_single_copy_reads_it_in_place(n):
    # cma forced: the peers read the staged buffers; mapping them (a trace line of the
    # registered path) shows they were registered, and the results show they were right.
    out, _, err = run_ranks(n, "torch_staging.py", CHUNK_BYTES // 4, timeout=240,
                            extra_env={"TUTTI_ALGO": "cma", "TUTTI_CHUNK_SIZE": str(CHUNK_BYTES),
                                       "TUTTI_DEBUG": "trace", "TUTTI_DEBUG_SUBSYS": "coll"})
    for r in range(n):
        assert out[r][-1] == "ok", out
    assert "registered region" in err, err[-3000:]
    assert "cannot map" not in err, err[-3000:]


def test_staging_default_algorithms():
    out, _, _ = run_ranks(3, "torch_staging.py", 1024, timeout=240)
    for r in range(3):
        assert out[r][-1] == "ok", out
