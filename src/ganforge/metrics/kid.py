"""Kernel Inception Distance (Bińkowski et al. 2018): unbiased MMD² with a cubic polynomial kernel, over subsets."""

import torch

from ganforge import dist
from ganforge.errors import UserError


def polynomial_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """k(x, y) = (x·y / d + 1)^3, the KID kernel (Bińkowski et al. 2018, sec. 3)."""
    return (x @ y.T / x.shape[1] + 1) ** 3


def mmd2_unbiased(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Unbiased MMD² estimate (Gretton et al. 2012, eq. 3): within-set kernel means exclude the i == j terms."""
    m, n = x.shape[0], y.shape[0]
    kxx, kyy = polynomial_kernel(x, x), polynomial_kernel(y, y)
    within_x = (kxx.sum() - kxx.diagonal().sum()) / (m * (m - 1))
    within_y = (kyy.sum() - kyy.diagonal().sum()) / (n * (n - 1))
    return within_x + within_y - 2 * polynomial_kernel(x, y).mean()


def kernel_inception_distance(
    real: torch.Tensor, fake: torch.Tensor, num_subsets: int = 100, subset_size: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """Mean and standard deviation of MMD² over `num_subsets` random equal-size subsets (drawn without replacement).

    Subsets bound the O(n²) cost; the mean of unbiased estimates stays unbiased. Computed in float64.
    """
    m = min(subset_size, real.shape[0], fake.shape[0])
    assert m >= 2, "KID needs at least 2 samples in each set"
    gen = torch.Generator().manual_seed(seed)
    estimates = []
    for _ in range(num_subsets):
        pick_real = torch.randperm(real.shape[0], generator=gen)[:m].to(real.device)
        pick_fake = torch.randperm(fake.shape[0], generator=gen)[:m].to(fake.device)
        estimates.append(mmd2_unbiased(real[pick_real].double(), fake[pick_fake].double()))
    values = torch.stack(estimates)
    std = values.std().item() if num_subsets > 1 else 0.0
    return values.mean().item(), std


def kid(ev, num_real: int | None, num_gen: int, num_subsets: int = 100, subset_size: int = 1000) -> dict | None:
    """KID between the reals' and fakes' Inception features; None on ranks other than 0."""
    if min(ev.real_count(num_real), ev.fake_count(num_gen)) < 2:
        raise UserError("kid: needs at least 2 real and 2 fake images; raise --num-gen / --num-real")
    real = ev.real_features(num_real, capture_all=True)
    fake = ev.fake_features(num_gen, capture_all=True)
    if not dist.is_main():
        return None
    with ev.stage(f"metrics: KID over {num_subsets} subsets"):
        mean, std = kernel_inception_distance(real.all, fake.all, num_subsets, subset_size, seed=ev.options.seed)
    return {"value": mean, "extra": {"std": std}, "num_real": real.count, "num_fake": fake.count}
