"""What native code writes to the process's stderr, routed into a list instead of the terminal.

torch's profiler prints from C++ straight to file descriptor 2 (Kineto's `USDT: ... profiler_start` and
`profiler_stop` notes; c10's `[W... CPUAllocator.cpp ...]` warning when profiling memory), below Python's
`sys.stderr`, so only redirecting the descriptor itself keeps them off the terminal. The profiler routes them only
while it starts and stops, never during the training steps, so that nothing a step prints is held back.
"""

import contextlib
import os
import sys
import tempfile

MAX_ROUTED_BYTES = 1 << 20  # kept of one routed block; torch's notes are a few lines


@contextlib.contextmanager
def routed_stderr(into: list[str]):
    """Within the block, file descriptor 2 (and Python's sys.stderr, when it writes there) goes to a temporary file,
    whose text is appended to `into` on leaving, on any path."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                sink.seek(0)
                into.append(sink.read(MAX_ROUTED_BYTES).decode("utf-8", "replace"))
    finally:
        os.close(saved)
