"""Fixtures shared by every test folder."""

import os
import socket
import subprocess
import sys

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a process group's rendezvous)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_two_ranks(script: str, *args: str, timeout: float = 120) -> list[str]:
    """Run the Python source `script` as ranks 0 and 1 of a gloo group on this machine (the environment torchrun
    would give them); both must exit 0. Returns their combined stdout and stderr, rank 0 first."""
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, f"exit {proc.returncode}:\n{out}"
    return outputs


@pytest.fixture
def run_two_ranks():
    """`run_two_ranks(script, *args) -> [output of rank 0, output of rank 1]`; see `_run_two_ranks`."""
    return _run_two_ranks
