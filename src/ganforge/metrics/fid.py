"""Fréchet Inception Distance (Heusel et al. 2017) between two Gaussians fitted to Inception pool features.

Images are resized to 299 x 299 first (metrics/inception.py): the FID of non-square images is comparable between runs
on the same data and aspect, not with the published FIDs of square datasets."""

import numpy as np
import torch

from ganforge import dist

# The pivoted Cholesky of a singular covariance stops at this rank; a covariance of higher rank (nearly as many
# samples as dimensions, yet not positive definite) takes the eigendecomposition, whose cost no longer grows with it.
MAX_PIVOTED_RANK = 256


def _pivoted_root(sigma: torch.Tensor) -> torch.Tensor | None:
    """R [d, r] with R R^T = sigma up to rounding, by Cholesky with diagonal pivoting (Higham 2002, Sec. 10.3):
    each step takes the largest remaining diagonal as the pivot and stops once it is at rounding level, LAPACK's
    xPSTRF tolerance d * eps * max(diag). O(d r^2) for rank r: milliseconds for the covariance of a few images in 2048
    dimensions, where `eigh` takes seconds. None when the rank exceeds MAX_PIVOTED_RANK."""
    d = sigma.shape[0]
    residual = sigma.diagonal().clone()  # the diagonal of sigma - R R^T so far
    tolerance = d * torch.finfo(sigma.dtype).eps * residual.max().clamp(min=0)
    root = sigma.new_zeros([d, min(d, MAX_PIVOTED_RANK)])
    for rank in range(d):
        pivot = int(residual.argmax())
        if residual[pivot] <= tolerance:
            return root[:, :rank]
        if rank == root.shape[1]:
            return None
        column = (sigma[:, pivot] - root[:, :rank] @ root[pivot, :rank]) / residual[pivot].sqrt()
        root[:, rank] = column
        residual = residual - column.square()
        residual[pivot] = 0  # exactly: the pivot's row is done
    return root  # full rank d, within MAX_PIVOTED_RANK


def _similar_symmetric(sigma1: torch.Tensor, sigma2: torch.Tensor) -> torch.Tensor:
    """A symmetric PSD matrix with the nonzero eigenvalues of S1 S2: R^T S2 R for any R with R R^T = S1.

    R is the Cholesky factor when S1 is positive definite (the usual case: more samples than dimensions); else the
    pivoted Cholesky factor of S1's rank r (fewer samples than dimensions: an r x r matrix, whose eigenvalues are the
    nonzero ones of S1 S2); else, for a rank above MAX_PIVOTED_RANK, the symmetric square root from `eigh`, which
    accepts any singular S1 but costs several times a Cholesky.
    """
    root, info = torch.linalg.cholesky_ex(sigma1)
    if info.item() != 0:
        root = _pivoted_root(sigma1)
    if root is None:
        eigvals, eigvecs = torch.linalg.eigh(sigma1)
        root = (eigvecs * eigvals.clamp(min=0).sqrt()) @ eigvecs.T  # rounding-level negatives clipped
    middle = root.T @ sigma2 @ root
    return (middle + middle.T) / 2


def frechet_distance(mu1, sigma1, mu2, sigma2) -> float:
    """d² = |mu1 - mu2|² + tr(S1 + S2 - 2 (S1 S2)^(1/2))  (Heusel et al. 2017, eq. 6; Dowson & Landau 1982).

    S1 S2 is similar to the symmetric PSD matrix R^T S2 R (S1 = R R^T), so tr((S1 S2)^(1/2)) is the sum of the square
    roots of that matrix's eigenvalues: real and stable also for singular covariances (fewer samples than dimensions),
    where a general `sqrtm` of the non-symmetric product returns complex rounding noise. float64 throughout; numpy
    arrays or tensors in.
    """
    mu1, mu2, sigma1, sigma2 = (torch.as_tensor(np.asarray(a), dtype=torch.float64) for a in (mu1, mu2, sigma1, sigma2))
    assert mu1.shape == mu2.shape and sigma1.shape == sigma2.shape == mu1.shape * 2, (mu1.shape, sigma1.shape)
    sigma1, sigma2 = (sigma1 + sigma1.T) / 2, (sigma2 + sigma2.T) / 2
    trace_sqrt = torch.linalg.eigvalsh(_similar_symmetric(sigma1, sigma2)).clamp(min=0).sqrt().sum()
    diff = mu1 - mu2
    value = (diff @ diff + sigma1.trace() + sigma2.trace() - 2 * trace_sqrt).item()
    # A squared distance: a negative value can only be rounding (identical statistics), so it is reported as 0.
    return max(value, 0.0)


def fid(ev, num_real: int | None, num_gen: int) -> dict | None:
    """FID between the reals' and the fakes' Inception statistics; None on ranks other than 0."""
    real = ev.real_features(num_real, capture_all=False)
    fake = ev.fake_features(num_gen, capture_all=False)
    if not dist.is_main():
        return None
    with ev.stage("metrics: FID from the feature statistics"):
        value = frechet_distance(*real.mean_cov(), *fake.mean_cov())
    return {"value": value, "num_real": real.count, "num_fake": fake.count}
