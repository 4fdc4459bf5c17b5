"""The C allocator's settings for a ganforge process: freed tensor memory is kept for the next training step.

glibc's malloc serves a block of 32 MiB or more (once its dynamic threshold has risen as far as it goes) with a fresh
mmap and unmaps it on free, so every training step faults each page of its large activations in again, 4 KiB at a
time, each page zeroed by the kernel: at 64 px on CPU that was about a tenth of every phase
(benchmarks/train_step.py). PyTorch's CPU performance guide preloads a caching allocator (jemalloc, tcmalloc) for the
same reason; raising glibc's two thresholds gets the reuse without a preload: large blocks come from the heap, and
freed ones stay there for the next step. The peak memory stays that of one step (the steps allocate the same sizes).
"""

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # <malloc.h>: free memory at the heap's top beyond this is returned to the system
M_MMAP_THRESHOLD = -3  # <malloc.h>: blocks of at least this many bytes get their own mapping
KEEP_BYTES = 2**31 - 1  # mallopt takes a C int: blocks up to 2 GiB come from the heap, and up to 2 GiB free is kept


def keep_freed_memory() -> bool:
    """Large blocks from the heap, and freed memory kept for reuse, in this process and the processes it forks (data
    loader workers); called once as the `ganforge` command starts. False where the C library is not glibc (macOS,
    musl), which keeps its own policy."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None)  # the symbols this process already has: its C library among them
    if not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES))
