import numpy as np
import pytest
import scipy.linalg
import torch

from ganforge.metrics import fid
from ganforge.metrics.features import FeatureStats
from ganforge.metrics.fid import frechet_distance


def _random_stats(rng, dim, samples):
    x = rng.normal(size=(samples, dim)) @ rng.normal(size=(dim, dim))
    return x.mean(0), np.cov(x, rowvar=False)


def _scipy_reference(mu1, s1, mu2, s2):
    covmean = scipy.linalg.sqrtm(s1 @ s2).real
    diff = mu1 - mu2
    return diff @ diff + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean)


@pytest.mark.parametrize("dim", [4, 32, 128])
def test_frechet_distance_matches_scipy_sqrtm(dim):
    rng = np.random.default_rng(dim)
    a, b = _random_stats(rng, dim, 4 * dim), _random_stats(rng, dim, 4 * dim)
    expected = _scipy_reference(*a, *b)
    assert frechet_distance(*a, *b) == pytest.approx(expected, rel=1e-6)


def test_identical_statistics_give_zero_and_distance_is_symmetric():
    rng = np.random.default_rng(1)
    a, b = _random_stats(rng, 64, 200), _random_stats(rng, 64, 200)
    assert frechet_distance(*a, *a) == pytest.approx(0, abs=1e-8 * np.trace(a[1]))
    assert frechet_distance(*a, *b) == pytest.approx(frechet_distance(*b, *a), rel=1e-9)
    assert frechet_distance(*a, *b) > 1


@pytest.mark.parametrize("small", [0.0, 1e-9])  # singular (the eigh path) and barely positive definite (Cholesky)
def test_singular_and_near_singular_covariances_match_closed_form(small):
    # Commuting PSD matrices Q diag(p) Q^T and Q diag(q) Q^T with tiny or zero eigenvalues (rank-deficient, like
    # covariances of fewer samples than dimensions): d² = |mu1 - mu2|² + sum (sqrt(p) - sqrt(q))².
    rng = np.random.default_rng(2)
    dim = 48
    q_mat, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    p, q = rng.uniform(0, 3, dim), rng.uniform(0, 3, dim)
    p[:20], q[10:30] = small, small
    s1, s2 = (q_mat * p) @ q_mat.T, (q_mat * q) @ q_mat.T
    mu1, mu2 = rng.normal(size=dim), rng.normal(size=dim)
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(p) - np.sqrt(q)) ** 2)
    assert frechet_distance(mu1, s1, mu2, s2) == pytest.approx(expected, rel=1e-6)


def test_few_samples_in_many_dimensions_stay_finite_and_nonnegative():
    rng = np.random.default_rng(3)
    a, b = _random_stats(rng, 256, 10), _random_stats(rng, 256, 10)  # rank 9 covariances
    value = frechet_distance(*a, *b)
    assert np.isfinite(value) and value > 0
    assert frechet_distance(*a, *a) == pytest.approx(0, abs=1e-6 * np.trace(a[1]))


def test_streamed_float64_moments_equal_numpy():
    rng = np.random.default_rng(4)
    x = rng.normal(3.0, 2.0, size=(37, 8)).astype(np.float32)
    stats = FeatureStats(8, capture_all=True, device="cpu")
    for chunk in np.array_split(x, 5):
        stats.append(torch.from_numpy(chunk))
    stats.finalize(37)
    mean, cov = stats.mean_cov()
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(0), rtol=1e-10)
    np.testing.assert_allclose(cov, np.cov(x.astype(np.float64), rowvar=False), rtol=1e-9, atol=1e-12)
    assert torch.equal(stats.all, torch.from_numpy(x))


def test_float32_statistics_are_compared_in_float64():
    rng = np.random.default_rng(5)
    single = [x.astype(np.float32) for x in (*_random_stats(rng, 32, 128), *_random_stats(rng, 32, 128))]
    expected = frechet_distance(*(x.astype(np.float64) for x in single))
    assert frechet_distance(*single) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("samples", "scale"), [(1, 1.0), (2, 1.0), (10, 1.0), (10, 1e-9)])
def test_the_pivoted_root_of_a_few_samples_covariance_has_their_rank_and_reproduces_it(samples, scale):
    """At any scale of the features: the stopping tolerance is relative to the largest diagonal (one floored at 1
    ended a covariance of tiny features at rank 0)."""
    rng = np.random.default_rng(samples)
    x = torch.from_numpy(rng.normal(size=(samples, 300)) @ rng.normal(size=(300, 300))) * scale
    x[:, 0] = 1.5  # a feature that never varies (a dead unit): its zero variance must not end the factorisation
    sigma = torch.cov(x.T, correction=min(1, samples - 1))
    root = fid._pivoted_root(sigma)
    assert root.shape == (300, samples - 1)  # n samples span n - 1 directions around their mean
    torch.testing.assert_close(root @ root.T, sigma, rtol=0, atol=1e-10 * sigma.diagonal().max().item())


def test_a_few_samples_distance_equals_the_one_from_their_features_exactly_and_eighs_closely(monkeypatch):
    """Cholesky fails on the covariance of fewer samples than dimensions. With the centred samples A / sqrt(n - 1),
    S1 = A^T A and the nonzero eigenvalues of S1 S2 are those of the small matrix A S2 A^T: the reference. The pivoted
    root gets it to rounding (the traces cancel to about 1e-10); the eigendecomposition (above MAX_PIVOTED_RANK) only
    to about 2e-8, as the square roots of its rounding-level eigenvalues add up."""
    rng = np.random.default_rng(6)
    xa, xb = (rng.normal(size=(40, 300)) @ rng.normal(size=(300, 300)) for _ in range(2))  # rank 39 each
    mu1, mu2 = (x.mean(0) for x in (xa, xb))
    s1, s2 = (np.cov(x, rowvar=False) for x in (xa, xb))
    centred = (xa - mu1) / np.sqrt(len(xa) - 1)
    small = centred @ s2 @ centred.T
    trace_sqrt = np.sqrt(np.clip(np.linalg.eigvalsh((small + small.T) / 2), 0, None)).sum()
    expected = np.sum((mu1 - mu2) ** 2) + np.trace(s1) + np.trace(s2) - 2 * trace_sqrt
    assert frechet_distance(mu1, s1, mu2, s2) == pytest.approx(expected, rel=1e-9)
    monkeypatch.setattr(fid, "MAX_PIVOTED_RANK", 8)  # rank 39 is above it: the eigendecomposition
    assert frechet_distance(mu1, s1, mu2, s2) == pytest.approx(expected, rel=1e-6)


def test_identical_statistics_never_give_a_negative_distance():
    """tr(S + S - 2 (S S)^(1/2)) rounds below 0 for some covariances (5 of these 20 here): a squared distance, it is
    then reported as 0, never negative."""
    values = [frechet_distance(*stats, *stats) for stats in (_random_stats(np.random.default_rng(seed), 16, 40)
                                                              for seed in range(20))]  # fmt: skip
    assert min(values) >= 0.0 and max(values) < 1e-9
