"""Capture and restore every random number generator a training run touches, as checkpoint-friendly values.

The captured dict holds only ints, floats, lists and tensors, so it goes through `checkpoint.save` unchanged.
"""

import random

import numpy as np
import torch


def seed_all(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and torch's. Training draws nothing from the first two, but
    checkpoints record their states: seeded, they make two runs of the same command write the same bytes."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_rng() -> dict:
    """State of Python's `random`, NumPy's global generator, torch's CPU generator and each CUDA device's."""
    version, mt_state, gauss_next = random.getstate()
    kind, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    return {
        "python": {"version": version, "state": list(mt_state), "gauss_next": gauss_next},
        "numpy": {
            "kind": kind,
            "keys": [int(k) for k in keys],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
        # One state per visible device; an empty list on machines without CUDA.
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng(state: dict) -> None:
    """Put back what `capture_rng` returned (possibly after a save/load round trip).

    CUDA states are restored for the devices present in both the checkpoint and this machine; a checkpoint made on
    a CUDA machine therefore restores its CPU streams on a CPU-only one.
    """
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss_next"]))
    npy = state["numpy"]
    keys = np.asarray(npy["keys"], dtype=np.uint32)
    np.random.set_state((npy["kind"], keys, npy["pos"], npy["has_gauss"], npy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if torch.cuda.is_available():
        for device, cuda_state in enumerate(state["cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, device)
