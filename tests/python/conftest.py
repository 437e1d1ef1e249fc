"""Shared helpers: where the build is, and how to start N ranks of a worker script.

Multi-rank tests run a worker under build/bin/tutti-run; the worker checks its results against
a reference it computes independently and exits non-zero (with a traceback) on a mismatch.
"""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
WORKERS = os.path.join(HERE, "workers")


def _build_dir():
    lib = os.environ.get("TUTTI_LIBRARY")
    if lib:
        return os.path.normpath(os.path.join(os.path.dirname(lib), ".."))
    return os.path.join(REPO, "build")


BUILD = _build_dir()
TUTTI_RUN = os.environ.get("TUTTI_RUN", os.path.join(BUILD, "bin", "tutti-run"))
PYTHON = sys.executable or "/usr/bin/python3"


def env_for_ranks(extra=None):
    env = dict(os.environ)
    path = os.path.join(REPO, "bindings", "python")
    env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TUTTI_LIBRARY", os.path.join(BUILD, "lib", "libtutti.so"))
    env["OMP_NUM_THREADS"] = "1"  # 2-core CI: ranks must not each spawn a thread per core
    if extra:
        env.update(extra)
    return env


_PREFIX = re.compile(r"^\[(\d+)\] ?(.*)$")


def split_by_rank(text):
    """tutti-run prefixes every line with "[rank] "; returns {rank: [lines]}."""
    out = {}
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


def run_ranks(n, script, *args, timeout=120, expect_rc=0, extra_env=None):
    """Runs script (a path, or a name under workers/) on n ranks; returns (stdout by rank,
    raw stdout, raw stderr). Fails the test, showing both streams, on an unexpected exit."""
    if not os.path.isabs(script):
        script = os.path.join(WORKERS, script)
    cmd = [TUTTI_RUN, "-n", str(n), "--timeout", str(timeout), PYTHON, script] + \
        [str(a) for a in args]
    p = subprocess.run(cmd, cwd=REPO, env=env_for_ranks(extra_env), capture_output=True,
                       text=True, timeout=timeout + 30)
    if expect_rc is not None and p.returncode != expect_rc:
        pytest.fail("%s exited %d (expected %d)\n--- stdout\n%s\n--- stderr\n%s"
                    % (" ".join(cmd), p.returncode, expect_rc, p.stdout, p.stderr))
    return split_by_rank(p.stdout), p.stdout, p.stderr


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


needs_torch = pytest.mark.skipif(not have_torch(), reason="torch (python3-torch) not installed")

# The package under test, from the source tree.
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
os.environ.setdefault("TUTTI_LIBRARY", os.path.join(BUILD, "lib", "libtutti.so"))
