"""Capture and restore the random number generators a training run draws from, as checkpoint-friendly values.

Training draws from torch's generators alone (latents, noise, augmentation), so those are what a checkpoint holds:
torch's CPU generator and each CUDA device's. Python's `random` and NumPy's global generator are not recorded (format
3 on): any thread of the process may draw from them (a client library's retry jitter, a server's request threads),
which made a checkpoint's bytes depend on what else ran beside the training. Checkpoints of formats 1 and 2 hold
them too; they are checked, as before, and not restored.

The captured dict holds only lists and tensors, so it goes through `checkpoint.save` unchanged. `check_rng` refuses a
stored state that `restore_rng` could not put back, on this machine or on one with CUDA.
"""

import random

import numpy as np
import torch

from ganforge.checkpoint.schema import entries, number, refuse, tensor, whole
from ganforge.checkpoint.serialize import describe
from ganforge.checkpoint.store import TENSORS

_MT_WORDS = 624  # Mersenne Twister state words (Python's random and NumPy's legacy generator)
_CUDA_STATE_BYTES = 16  # torch's Philox state: the seed (uint64), then the offset (int64)
_GLOBAL_STATES_UNTIL = 2  # the last checkpoint format that recorded Python's and NumPy's global generators


def capture_rng() -> dict:
    """State of torch's CPU generator and each CUDA device's."""
    return {
        "torch": torch.get_rng_state(),
        # One state per visible device; an empty list on machines without CUDA.
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng(state: dict) -> None:
    """Put back what `capture_rng` returned (possibly after a save/load round trip).

    CUDA states are restored for the devices present in both the checkpoint and this machine; a checkpoint made on
    a CUDA machine therefore restores its CPU streams on a CPU-only one. An older checkpoint's Python and NumPy states
    are left alone (training draws nothing from them).
    """
    torch.set_rng_state(state["torch"])
    if torch.cuda.is_available():
        for device, cuda_state in enumerate(state["cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, device)


def check_rng(rng, version: int) -> None:
    """Refuse (schema.Refused) a stored `capture_rng` state, of a checkpoint of format `version`, that `restore_rng`
    could not put back. torch's CPU state (and an older format's Python and NumPy states) are applied to scratch
    generators, so exactly what they accept passes; CUDA states are checked here by the rule of torch's CUDA
    generator, so a CPU-only machine judges them as a GPU one would."""
    if version <= _GLOBAL_STATES_UNTIL:
        rng = entries(rng, "rng", ("python", "numpy", "torch", "cuda"))
        _check_python(rng["python"])
        _check_numpy(rng["numpy"])
    else:
        rng = entries(rng, "rng", ("torch", "cuda"))
    tensor(rng["torch"], "rng/torch", torch.uint8, tuple(torch.get_rng_state().shape))
    try:
        torch.Generator().set_state(rng["torch"])
    except RuntimeError as error:
        refuse("rng/torch", f"is no state of torch's CPU generator ({str(error)[:100]})", TENSORS)
    if not isinstance(rng["cuda"], list):
        refuse("rng/cuda", f"must be a list of device states, not {describe(rng['cuda'])}")
    for device, state in enumerate(rng["cuda"]):
        _check_cuda(state, f"rng/cuda/{device}")


def _words(words, where: str, count: int) -> None:
    if not (isinstance(words, list) and len(words) == count):
        refuse(where, f"must be a list of {count} numbers, not {describe(words)}")
    if not all(type(w) is int and 0 <= w < 2**32 for w in words[:_MT_WORDS]):
        refuse(where, "must hold unsigned 32-bit numbers only")


def _check_python(python) -> None:
    """`random.getstate()`: version 3, the 624 Mersenne Twister words and the position in them, a cached Gaussian."""
    python = entries(python, "rng/python", ("version", "state", "gauss_next"))
    whole(python["version"], "rng/python/version", 3, 3)
    _words(python["state"], "rng/python/state", _MT_WORDS + 1)
    whole(python["state"][-1], "rng/python/state (its position)", 0, _MT_WORDS)
    if python["gauss_next"] is not None:
        number(python["gauss_next"], "rng/python/gauss_next")
    random.Random().setstate((3, tuple(python["state"]), python["gauss_next"]))


def _check_numpy(state) -> None:
    """`np.random.get_state(legacy=True)`: MT19937 with its 624 words, the position in them, a cached Gaussian."""
    state = entries(state, "rng/numpy", ("kind", "keys", "pos", "has_gauss", "cached_gaussian"))
    if state["kind"] != "MT19937":
        refuse("rng/numpy/kind", f"must be 'MT19937', not {describe(state['kind'])}")
    _words(state["keys"], "rng/numpy/keys", _MT_WORDS)
    whole(state["pos"], "rng/numpy/pos", 0, _MT_WORDS)
    whole(state["has_gauss"], "rng/numpy/has_gauss", 0, 1)
    number(state["cached_gaussian"], "rng/numpy/cached_gaussian")
    keys = np.asarray(state["keys"], dtype=np.uint32)
    np.random.RandomState().set_state(("MT19937", keys, state["pos"], state["has_gauss"], state["cached_gaussian"]))


def _check_cuda(state, where: str) -> None:
    """What torch's CUDA generator accepts (CUDAGeneratorImpl::set_state) of the states `capture_rng` writes: 16
    bytes, the seed and then an offset that is a multiple of 4 as an unsigned number (its Philox engine hands out 4
    numbers per offset step). (torch also takes a seed alone, 8 bytes, which ganforge never writes.)"""
    tensor(state, where, torch.uint8, (_CUDA_STATE_BYTES,))
    offset = int(state[8:].view(torch.int64).item())
    if offset % 4:  # 2**64 is a multiple of 4: the same verdict as torch's on the unsigned offset
        refuse(where, f"has a Philox offset of {offset}, not a multiple of 4", TENSORS)
