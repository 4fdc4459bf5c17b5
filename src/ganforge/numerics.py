"""Numeric settings shared by every package that runs networks: training, metrics, export checks and the doctor.

It sits on the ground floor (it imports nothing from ganforge), so any layer may use it.
"""

import contextlib

import torch


@contextlib.contextmanager
def fp32_math(tf32: bool):
    """Let float32 matmuls and convolutions use TF32 tensor cores (`tf32=True`) or forbid it (IEEE fp32) inside the
    block, restoring the caller's settings afterwards. cuDNN allows TF32 convolutions by default, so code that
    promises fp32 (metrics, doctor's reference checks, `--precision fp32`) must say so explicitly."""
    backends = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    saved = [backend.fp32_precision for backend in backends]
    for backend in backends:
        backend.fp32_precision = "tf32" if tf32 else "ieee"
    try:
        yield
    finally:
        for backend, value in zip(backends, saved, strict=True):
            backend.fp32_precision = value
