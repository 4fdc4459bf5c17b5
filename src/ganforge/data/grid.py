"""Images side by side: the one grid that training's sample images and `ganforge generate --grid` both draw."""

import math

import numpy as np
import torch

from ganforge.data.loader import to_uint8


def image_grid(images: torch.Tensor, columns: int) -> np.ndarray:
    """[N, C, H, W] floats in [-1, 1] -> uint8 [rows*H, columns*W, C] (C 1 or 3), row-major, black padding."""
    images = to_uint8(images.detach().cpu())
    n, c, h, w = images.shape
    rows = math.ceil(n / columns)
    canvas = torch.zeros([rows * columns, c, h, w], dtype=torch.uint8)
    canvas[:n] = images
    canvas = canvas.reshape(rows, columns, c, h, w).permute(0, 3, 1, 4, 2)  # [rows, H, columns, W, C]
    return canvas.reshape(rows * h, columns * w, c).numpy()
