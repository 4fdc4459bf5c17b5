"""The one place where a `--device auto|cuda|cpu` choice becomes a torch.device."""

import torch

from ganforge.errors import UserError

DEVICE_CHOICES = ("auto", "cuda", "cpu")


def pick_device(choice: str, index: int = 0) -> torch.device:
    """CUDA device `index` for "cuda", and for "auto" when torch sees a GPU; else the CPU.

    "cuda" where there is no usable GPU is the user's error, told before any work starts (torch would otherwise fail
    deep inside with an AttributeError on a CPU-only build)."""
    if choice == "cuda" and not torch.cuda.is_available():
        why = ("this PyTorch is a CPU-only build" if torch.version.cuda is None
               else "PyTorch sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)")  # fmt: skip
        raise UserError(f"--device cuda: {why} (torch {torch.__version__}); pass --device cpu, or install a CUDA "
                        "build of PyTorch (`ganforge doctor` checks the setup)")  # fmt: skip
    if choice == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", index)
