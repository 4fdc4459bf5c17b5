"""The Triton kernels as a GPU runs them, compiled, against the reference ops (kernels_on_cuda.py, in a fresh process:
the CPU tests import the kernels under the interpreter). Needs a GPU (the `cuda` marker) and Triton."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cuda
pytest.importorskip("triton", reason="Triton is not installed (PyTorch's CUDA wheels bring it)")


def test_the_compiled_kernels_equal_the_reference_on_the_gpu():
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    script = Path(__file__).with_name("kernels_on_cuda.py")
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "compiled Triton kernels equal the reference" in result.stdout
