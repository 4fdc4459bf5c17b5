import itertools

import pytest
import torch

from ganforge.metrics.kid import kernel_inception_distance, mmd2_unbiased
from ganforge.metrics.pr import coverage, knn_radii, precision_recall


def _direct_mmd2(x, y):
    """Unbiased MMD² by explicit sums over pairs, with k(a, b) = (a·b / d + 1)^3."""
    d = x.shape[1]

    def k(a, b):
        return (float(a @ b) / d + 1) ** 3

    m, n = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i, j in itertools.permutations(range(m), 2)) / (m * (m - 1))
    yy = sum(k(y[i], y[j]) for i, j in itertools.permutations(range(n), 2)) / (n * (n - 1))
    xy = sum(k(x[i], y[j]) for i in range(m) for j in range(n)) / (m * n)
    return xx + yy - 2 * xy


def test_mmd2_matches_direct_pairwise_sums():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(9, 5, generator=gen, dtype=torch.float64)
    y = torch.randn(7, 5, generator=gen, dtype=torch.float64) + 0.5
    assert mmd2_unbiased(x, y).item() == pytest.approx(_direct_mmd2(x, y), rel=1e-12)


def test_kid_with_one_full_subset_equals_direct_mmd2():
    gen = torch.Generator().manual_seed(1)
    real, fake = torch.randn(12, 6, generator=gen), torch.randn(12, 6, generator=gen) * 1.5
    mean, std = kernel_inception_distance(real, fake, num_subsets=1, subset_size=100)
    assert mean == pytest.approx(_direct_mmd2(real.double(), fake.double()), rel=1e-10)
    assert std == 0.0


def test_kid_is_near_zero_for_one_distribution_and_grows_with_a_shift():
    gen = torch.Generator().manual_seed(2)
    real, fake = torch.randn(400, 8, generator=gen), torch.randn(400, 8, generator=gen)
    same, _ = kernel_inception_distance(real, fake, num_subsets=10, subset_size=200)
    near, _ = kernel_inception_distance(real, fake + 0.5, num_subsets=10, subset_size=200)
    far, _ = kernel_inception_distance(real, fake + 1.0, num_subsets=10, subset_size=200)
    assert abs(same) < 0.2 * near < 0.2 * far


def _line(xs):
    return torch.tensor([[float(x), 0.0] for x in xs])


def test_knn_radii_on_a_line():
    # Points 0..9: the 3rd nearest other point is 3 away at the ends and 2 away inside.
    assert knn_radii(_line(range(10)), k=3).tolist() == [3, 2, 2, 2, 2, 2, 2, 2, 2, 3]


def test_radii_and_coverage_in_chunks_equal_them_in_one_piece_and_a_direct_count():
    """Sets larger than the chunk (the defaults are 1024 points) are split into chunks of queries, each against every
    point: the result is the one a direct count gives, whatever the chunk."""
    generator = torch.Generator().manual_seed(0)
    points, queries = torch.randn(23, 4, generator=generator), torch.randn(17, 4, generator=generator)
    direct = torch.tensor([sorted((p - q).norm().item() for q in points)[3] for p in points])
    torch.testing.assert_close(knn_radii(points, 3, batch=5), direct)
    inside = sum(any((q - c).norm() <= r for c, r in zip(points, direct, strict=True)) for q in queries) / len(queries)
    assert coverage(queries, points, direct, batch=5) == pytest.approx(inside)


def test_precision_recall_on_constructed_sets():
    real = _line(range(10))
    # Half the fakes sit next to reals 0..4, half 1000 away. Fake balls: radius 3 at 0.1 and 4.1, 2 at 1.1..3.1,
    # covering [-2.9, 7.1]: reals 0..7 are inside, so recall is 8/10; precision is 5/10.
    fake = _line([0.1, 1.1, 2.1, 3.1, 4.1, 1000.1, 1001.1, 1002.1, 1003.1, 1004.1])
    assert precision_recall(real, fake, k=3) == (0.5, 0.8)
    assert precision_recall(real, real, k=3) == (1.0, 1.0)
    assert precision_recall(real, real + 100, k=3) == (0.0, 0.0)


def test_coverage_includes_the_ball_boundary():
    """Kynkaanniemi et al. 2019, Eq. 1: a sample counts when its distance to a centre is <= that centre's radius."""
    assert coverage(_line([3.0, 3.5]), _line([0.0]), torch.tensor([3.0])) == 0.5


def test_kid_subsets_are_seeded_random_and_no_larger_than_either_set():
    gen = torch.Generator().manual_seed(3)
    real, fake = torch.randn(40, 4, generator=gen), torch.randn(40, 4, generator=gen) + 0.3
    (full, _), subsets = kernel_inception_distance(real, fake, 1, 40), kernel_inception_distance(real, fake, 5, 10, 1)
    assert subsets == kernel_inception_distance(real, fake, 5, 10, seed=1)  # the seed fixes the subsets
    assert subsets != kernel_inception_distance(real, fake, 5, 10, seed=2)
    assert subsets[1] > 0 and subsets[0] != pytest.approx(full, rel=1e-6)
    few = real[:5]  # subsets are capped by the smaller set
    assert kernel_inception_distance(few, fake, 3, 10, seed=4) == kernel_inception_distance(few, fake, 3, 5, seed=4)


def test_kid_of_two_subsets_has_their_spread_and_of_one_none():
    gen = torch.Generator().manual_seed(4)
    real, fake = torch.randn(30, 4, generator=gen), torch.randn(30, 4, generator=gen) + 0.3
    assert kernel_inception_distance(real, fake, 2, 10, seed=0)[1] > 0
    assert kernel_inception_distance(real, fake, 1, 10, seed=0)[1] == 0.0
