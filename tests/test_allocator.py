"""The allocator setting the `ganforge` command makes: a freed large block is reused without page faults."""

import ctypes
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ganforge import allocator, cli

BLOCK = 64 * 2**20  # larger than the most glibc's dynamic threshold keeps on the heap (32 MiB)
PAGES = BLOCK // 4096

# Allocates, touches and frees one block twice, as two training steps do with an activation; prints the page faults
# of the second time. argv[1] == "keep": the setting applied first.
SECOND_STEP_FAULTS = f"""
import ctypes, resource, sys
from ganforge import allocator
if sys.argv[1] == "keep":
    assert allocator.keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def step():
    block = libc.malloc({BLOCK})
    ctypes.memset(block, 1, {BLOCK})
    libc.free(block)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _glibc() -> bool:
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "gnu_get_libc_version")


def _second_step_faults(mode: str) -> int:
    return int(subprocess.run([sys.executable, "-c", SECOND_STEP_FAULTS, mode], check=True, capture_output=True,
                              text=True).stdout)  # fmt: skip


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's")
def test_a_freed_large_block_is_reused_without_faulting_its_pages_in_again():
    assert _second_step_faults("default") > PAGES // 2  # glibc's own policy: mapped anew, every page faulted again
    assert _second_step_faults("keep") < PAGES // 20


@pytest.mark.skipif(_glibc(), reason="only where the C library is not glibc")
def test_other_c_libraries_are_left_alone():
    assert not allocator.keep_freed_memory()


def test_every_ganforge_command_applies_it_first(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append("kept"))
    result = CliRunner().invoke(cli.main, ["dataset", "info", "no-such-dataset.zip"])
    assert result.exit_code == 2 and calls == ["kept"]
