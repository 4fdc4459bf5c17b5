"""Improved precision and recall (Kynkäänniemi et al. 2019) from k-nearest-neighbour balls in feature space.

The paper embeds images with VGG16; ganforge has no VGG16 weights source, so it uses the Inception pool features and
names that network in every result.
"""

import torch

from ganforge import dist
from ganforge.errors import UserError


def knn_radii(points: torch.Tensor, k: int, batch: int = 1024) -> torch.Tensor:
    """Distance from each point to its k-th nearest other point (the point itself is the 0th neighbour)."""
    assert points.shape[0] > k, f"need more than k={k} points, got {points.shape[0]}"
    radii = [torch.cdist(chunk, points).kthvalue(k + 1, dim=1).values for chunk in points.split(batch)]
    return torch.cat(radii)


def coverage(queries: torch.Tensor, centres: torch.Tensor, radii: torch.Tensor, batch: int = 1024) -> float:
    """Fraction of `queries` inside at least one ball (centre, radius), boundary included (paper eq. 1)."""
    inside = [(torch.cdist(chunk, centres) <= radii[None]).any(dim=1) for chunk in queries.split(batch)]
    return torch.cat(inside).double().mean().item()


def precision_recall(real: torch.Tensor, fake: torch.Tensor, k: int = 3) -> tuple[float, float]:
    """Precision: fakes inside the reals' manifold estimate; recall: reals inside the fakes' (paper eqs. 1-2)."""
    real, fake = real.float(), fake.float()
    precision = coverage(fake, real, knn_radii(real, k))
    recall = coverage(real, fake, knn_radii(fake, k))
    return precision, recall


def pr(ev, num_real: int | None, num_gen: int, k: int = 3) -> dict | None:
    """Precision and recall with k-NN balls on Inception features; None on ranks other than 0."""
    counts = ev.real_count(num_real), ev.fake_count(num_gen)
    if min(counts) <= k:
        raise UserError(
            f"pr: {min(counts)} images, but k={k} nearest neighbours need more than {k} in each set; "
            "raise --num-gen / --num-real or use more images"
        )
    real = ev.real_features(num_real, capture_all=True)
    fake = ev.fake_features(num_gen, capture_all=True)
    if not dist.is_main():
        return None
    with ev.stage(f"metrics: precision and recall from {k}-nearest-neighbour balls"):
        precision, recall = precision_recall(real.all, fake.all, k)
    return {
        "results": {"precision": precision, "recall": recall},
        "extra": {"k": k},
        "num_real": real.count,
        "num_fake": fake.count,
    }
