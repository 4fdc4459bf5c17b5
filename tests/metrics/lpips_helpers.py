"""A stand-in for NVlabs' LPIPS network file (vgg16.pt), which cannot be downloaded in tests."""

import math
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


class StandInLPIPS(nn.Module):
    """Called as NVlabs' vgg16.pt is: [N, 3, H, W] pixels in [0, 255] -> [N, F] features; a fixed random 3x3
    convolution and tanh (any image size, so that the 64 px probe passes too)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("weight", torch.randn([4, 3, 3, 3], generator=torch.Generator().manual_seed(1)) / 2)

    def forward(self, x: torch.Tensor, resize_images: bool = True, return_lpips: bool = False) -> torch.Tensor:
        y = torch.tanh(F.conv2d(x.to(self.weight.dtype) / 127.5 - 1, self.weight))
        return y.flatten(1) / math.sqrt(y.shape[2] * y.shape[3])


def save_stand_in(path: Path) -> str:
    """The stand-in scripted and saved at `path`, as the official file is; returns the path as a string."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is the official file's format
        torch.jit.script(StandInLPIPS()).save(str(path))
    return str(path)
