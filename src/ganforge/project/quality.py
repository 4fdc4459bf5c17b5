"""How close a projection is to its target, on the uint8 images as saved: PSNR, and SSIM (Wang et al. 2004, "Image
Quality Assessment: From Error Visibility to Structural Similarity", eq. 13 with their constants: an 11x11 Gaussian
window of sigma 1.5, K1 = 0.01, K2 = 0.03, L = 255, over the positions where the window fits, averaged over the
positions and the channels)."""

import math

import torch
import torch.nn.functional as F

SSIM_WINDOW, SSIM_SIGMA, SSIM_K1, SSIM_K2, PEAK = 11, 1.5, 0.01, 0.03, 255.0


def psnr(a: torch.Tensor, b: torch.Tensor) -> list[float]:
    """Per image of two uint8 batches [N, C, H, W]: 10 log10(255^2 / MSE) in dB (inf for identical images)."""
    mse = (a.double() - b.double()).square().mean((1, 2, 3))
    return [math.inf if m == 0 else 10 * math.log10(PEAK**2 / m) for m in mse.tolist()]


def gaussian_window(size: int = SSIM_WINDOW, sigma: float = SSIM_SIGMA) -> torch.Tensor:
    """[size, size] float64 Gaussian weights summing to 1."""
    x = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    g = torch.exp(-x.square() / (2 * sigma**2))
    g = g / g.sum()
    return torch.outer(g, g)


def ssim(a: torch.Tensor, b: torch.Tensor) -> list[float]:
    """Per image of two uint8 batches [N, C, H, W]: the mean SSIM over channels and window positions; images smaller
    than the window use a window of their size."""
    n, channels, height, width = a.shape
    size = min(SSIM_WINDOW, height, width)
    window = gaussian_window(size).expand(channels, 1, size, size)  # one per channel: a grouped convolution

    def mean(x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, window, groups=channels)

    x, y = a.double(), b.double()
    mu_x, mu_y = mean(x), mean(y)
    var_x, var_y = mean(x * x) - mu_x.square(), mean(y * y) - mu_y.square()
    cov = mean(x * y) - mu_x * mu_y
    c1, c2 = (SSIM_K1 * PEAK) ** 2, (SSIM_K2 * PEAK) ** 2
    index = ((2 * mu_x * mu_y + c1) * (2 * cov + c2)) / ((mu_x.square() + mu_y.square() + c1) * (var_x + var_y + c2))
    return index.mean((1, 2, 3)).tolist()
