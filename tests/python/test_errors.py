"""Error mapping: one tutti.Error subclass per result code, with the library's own sentence."""
import numpy as np
import pytest

import tutti
from conftest import run_ranks


@pytest.fixture(scope="module")
def solo():
    """A communicator of one rank: enough for argument errors, no launcher needed."""
    comm = tutti.init(0, 1, tutti.get_unique_id())
    yield comm
    comm.destroy()


def test_every_result_code_has_its_class():
    classes = {1: tutti.InvalidArgumentError, 2: tutti.InvalidUsageError,
               3: tutti.SystemCallError, 4: tutti.RemoteError, 5: tutti.TimeoutExpiredError,
               6: tutti.AbortedError, 7: tutti.InternalError}
    from tutti.errors import error_for
    for code, cls in classes.items():
        e = error_for(code)
        assert type(e) is cls and isinstance(e, tutti.Error) and e.code == code
        # without a communicator's sentence, the library's name of the code is the message
        assert str(e) == tutti.result_string(code) and str(e)
    assert len({tutti.result_string(c) for c in classes}) == len(classes)
    assert issubclass(tutti.InvalidArgumentError, ValueError)
    assert issubclass(tutti.TimeoutExpiredError, TimeoutError)


def test_unique_id_is_bytes_and_fresh():
    a, b = tutti.get_unique_id(), tutti.get_unique_id()
    assert isinstance(a, bytes) and len(a) == tutti.UNIQUE_ID_BYTES and a != b


def test_init_checks_arguments():
    with pytest.raises(tutti.InvalidArgumentError, match="unique_id"):
        tutti.init(0, 2, b"short")
    with pytest.raises(tutti.InvalidArgumentError, match="rank 3 is not in"):
        tutti.init(3, 2, tutti.get_unique_id())


def test_library_message_reaches_the_exception(solo):
    with pytest.raises(tutti.InvalidArgumentError) as ei:
        solo.allreduce(np.ones(3, np.float32), op=tutti.BAND)
    msg = str(ei.value)
    assert "tutti_allreduce" in msg and "band" in msg and "float32" in msg, msg
    assert ei.value.code == 1
    assert solo.last_error == msg


def test_python_side_shape_checks(solo):
    with pytest.raises(tutti.InvalidArgumentError, match="recvbuf has 3 elements, sendbuf 4"):
        solo.allreduce(np.ones(4), np.ones(3))
    with pytest.raises(tutti.InvalidArgumentError, match="not C-contiguous"):
        solo.allreduce(np.ones((4, 4))[:, 1])
    ro = np.ones(4)
    ro.flags.writeable = False
    with pytest.raises(tutti.InvalidArgumentError, match="read-only"):
        solo.allreduce(np.ones(4), ro)
    with pytest.raises(tutti.InvalidArgumentError, match="root 1 is not a rank"):
        solo.broadcast(np.ones(2), root=1)
    with pytest.raises(tutti.InvalidArgumentError, match="unknown reduction"):
        solo.allreduce(np.ones(2), op="median")
    with pytest.raises(tutti.InvalidArgumentError, match="differ in element type"):
        solo.allreduce(np.ones(2), np.ones(2, np.float32))
    with pytest.raises(tutti.InvalidArgumentError, match="no tutti equivalent"):
        solo.allreduce(np.ones(2, np.complex64))
    with pytest.raises(tutti.InvalidArgumentError, match="expected a NumPy array"):
        solo.allreduce([1.0, 2.0])
    with pytest.raises(tutti.InvalidArgumentError, match="needs size\\*sendcount"):
        solo.allgather(np.ones(2), np.ones(3))


def test_single_rank_results(solo):
    x = np.arange(5, dtype=np.int64)
    assert np.array_equal(solo.allreduce(x, op="max"), x)
    assert np.array_equal(solo.allgather(x), x[None, :])
    req = solo.iallreduce(x)
    assert np.array_equal(req.wait(), x) and req.test()


def test_destroyed_communicator_refuses():
    comm = tutti.init(0, 1, tutti.get_unique_id())
    with comm:
        pass
    with pytest.raises(tutti.InvalidUsageError, match="destroyed"):
        comm.barrier()
    comm.destroy()  # twice is fine


def test_ranks_disagreeing_raise_invalid_usage_on_every_rank():
    out, _, _ = run_ranks(3, "errors_multi.py", "mismatch", timeout=60)
    for r in range(3):
        assert out[r][0].startswith("InvalidUsageError: tutti_allreduce"), out[r]


def test_abort():
    out, _, _ = run_ranks(2, "errors_multi.py", "abort", timeout=60)
    assert out[0][0].startswith("AbortedError:"), out
    assert out[1][0].split(":")[0] in ("AbortedError", "RemoteError"), out


def test_dead_peer_raises_remote_error():
    out, _, _ = run_ranks(2, "errors_multi.py", "peer_dies", timeout=90)
    assert out[0][0].split()[0] in ("RemoteError", "TimeoutExpiredError"), out
