"""Regression tests of issue 11's binding and torch backend items (4, 5, 10, 11, 12, 15, 17)."""
import socket
import time

import numpy as np
import pytest

import tutti
from conftest import needs_torch, run_ranks


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_exit(err):
    # Both workers end without dist.destroy_process_group(), as many scripts do.
    assert "Exception ignored" not in err and "AttributeError" not in err, err


@needs_torch
def test_torch_coalesced_tags_any_source_int16_bool_sparse():
    out, _, err = run_ranks(3, "torch_issue11.py", timeout=150)
    assert sorted(out) == [0, 1, 2]
    for r in range(3):
        assert out[r][-1] == "ok", out
    _clean_exit(err)


@needs_torch
def test_torch_timeout_is_the_deadline():
    out, _, err = run_ranks(2, "torch_timeout.py", _free_port(), timeout=120)
    lines = [line for line in out[0] if " timed out in " in line]
    assert len(lines) == 2, out
    for line in lines:
        assert float(line.split(" timed out in ")[1].split()[0]) < 8, line
        assert "Timed out" in line, line
    assert out[0][-1] == "ok" and out[1][-1] == "ok", out
    _clean_exit(err)


def test_init_failure_carries_the_sentence(monkeypatch):
    # The id is not one tutti_get_unique_id made: the library says so, not just
    # "invalid argument".
    with pytest.raises(tutti.InvalidArgumentError) as e:
        tutti.init(0, 1, bytes(tutti.UNIQUE_ID_BYTES))
    assert "not made by tutti_get_unique_id" in str(e.value), str(e.value)
    monkeypatch.setenv("TUTTI_RANK", "5")
    monkeypatch.setenv("TUTTI_WORLD_SIZE", "2")
    monkeypatch.setenv("TUTTI_ADDR", "127.0.0.1:1")
    with pytest.raises(tutti.Error) as e:
        tutti.init_env()
    msg = str(e.value)
    assert msg.startswith("tutti_comm_init_env: ") and len(msg) > len(
        "tutti_comm_init_env: invalid argument"), msg
    assert "5" in msg, msg  # names the bad rank


def test_set_timeout_and_shrink_single_rank():
    comm = tutti.init(0, 1, tutti.get_unique_id())
    with pytest.raises(tutti.InvalidArgumentError) as e:
        comm.set_timeout(0)
    assert "tutti_comm_set_timeout" in str(e.value) and "positive" in str(e.value), str(e.value)
    comm.set_timeout(2.5)
    new = comm.shrink()
    assert (new.rank, new.size) == (0, 1)
    x = np.arange(3, dtype=np.int16)
    assert np.array_equal(new.allreduce(x), x)
    new.destroy()
    comm.destroy()


def test_timeout_errors_say_timed_out():
    e = tutti.errors.error_for(5, "tutti_barrier (rank 0 of 2): timed out after 1.0 s")
    assert isinstance(e, tutti.TimeoutExpiredError) and str(e).startswith("Timed out"), str(e)


def test_int16_uint16_numpy_single_rank():
    comm = tutti.init(0, 1, tutti.get_unique_id())
    for dt in (np.int16, np.uint16):
        x = np.array([1, 2, 3], dtype=dt)
        assert np.array_equal(comm.allreduce(x, op=tutti.AVG), x)
    comm.destroy()
