"""Metrics of non-square images (W x H, a StyleGAN2 generator with an aspect, or such datasets): FID, KID and SWD
between a non-square generator and a dataset of its shape give finite numbers in both orientations; a generator and a
dataset of different aspect ratios are refused, naming both (C, H, W); SWD's pyramid and patches work per dimension
(square images keep their draws); PPL and the projector's downsampling keep the whole frame and its aspect."""

import math

import numpy as np
import PIL.Image
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from lpips_helpers import save_stand_in
from torch import nn

from ganforge.cli import main
from ganforge.data.build import BuildOptions, build
from ganforge.errors import UserError
from ganforge.metrics import compute_metric, compute_metrics, inception, swd
from ganforge.metrics.perceptual import area_downsample
from ganforge.metrics.ppl import lpips_pixels
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

WIDE, TALL = (1, 2), (2, 1)  # aspect (rows, cols): 16 wide x 8 tall, 8 wide x 16 tall at resolution 8


def _generator(aspect) -> Generator:
    torch.manual_seed(0)
    G = Generator(resolution=8, aspect=aspect, z_dim=8, w_dim=8, channel_base=64, channel_max=16, mapping_layers=2)
    return G.eval()


def _pngs(path, count: int, width: int, height: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    path.mkdir()
    for i in range(count):
        PIL.Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(path / f"{i:03d}.png")
    return path


def _dataset(tmp_path, width: int, height: int, count: int = 4):
    """A zip built by `dataset build --resolution WxH` from photos of another size."""
    dest = tmp_path / f"data{width}x{height}.zip"
    build(
        _pngs(tmp_path / f"photos{width}x{height}", count, 40, 40),
        dest,
        BuildOptions(resolution=(width, height), workers=0),
    )
    return dest


class _TinyInception(nn.Module):
    """Stands in for the Inception network behind inception.InceptionFeatures (which still resizes every image to
    299 x 299 as the protocol does): 4 x 4 average colours of that input through a fixed random projection."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.shape[1:] == (3, inception.INCEPTION_SIZE, inception.INCEPTION_SIZE), x.shape
        pooled = F.adaptive_avg_pool2d(x, 4).flatten(1)  # [N, 48]
        return pooled @ torch.randn(48, inception.FEATURE_DIM, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def tiny_inception(monkeypatch):
    """16 features instead of 2048 (the Frechet distance of 2048 dimensions takes seconds), same input protocol."""
    monkeypatch.setattr(inception, "FEATURE_DIM", 16)
    monkeypatch.setattr(
        inception, "load_inception", lambda *args, **kwargs: inception.InceptionFeatures(_TinyInception())
    )


@pytest.mark.parametrize("aspect", [WIDE, TALL])
def test_fid_kid_and_swd_of_a_non_square_generator_against_data_of_its_shape_are_finite(
    aspect, tmp_path, tiny_inception
):
    G = _generator(aspect)
    height, width = G.image_size
    data = _dataset(tmp_path, width, height)
    names = ["fid50k_full", "kid50k_full", "swd16k"]
    records = compute_metrics(names, generator=G, real=data, num_gen=4, batch_size=4, workers=0, progress=False,
                              cache_dir=tmp_path / "cache", device="cpu")  # fmt: skip
    values = {key: value for record in records for key, value in record["results"].items()}
    assert set(values) == {"fid50k_full", "kid50k_full", f"swd16k_{width}x{height}", "swd16k_avg"}
    assert all(math.isfinite(value) for value in values.values()), values
    assert values["fid50k_full"] > 0 and records[0]["num_real"] == records[0]["num_fake"] == 4


@pytest.mark.parametrize("aspect", [WIDE, TALL])
def test_a_generator_against_data_of_another_aspect_is_refused_naming_both_shapes(aspect, tmp_path):
    G = _generator(aspect)
    height, width = G.image_size
    square = _pngs(tmp_path / "square", 4, 8, 8)
    for name in ("fid50k_full", "kid50k_full", "pr50k3_full", "swd16k"):
        with pytest.raises(UserError) as error:
            compute_metric(name, generator=G, real=square, num_gen=4, progress=False, cache_dir=tmp_path / "cache")
        message = str(error.value)
        assert f"(C, H, W) = (3, {height}, {width})" in message and "(3, 8, 8)" in message, message
        assert name in message and f"{width}x{height}" in message
    # the same shape turned by 90 degrees is another aspect too
    turned = _pngs(tmp_path / "turned", 4, height, width)
    with pytest.raises(UserError, match="aspect ratio"):
        compute_metric("fid50k_full", generator=G, real=turned, num_gen=4, progress=False)


def test_the_cli_refuses_a_non_square_snapshot_against_square_data_with_exit_2(tmp_path):
    snapshot = tmp_path / "G.safetensors"
    save_snapshot(snapshot, _generator(WIDE), {})
    square = _pngs(tmp_path / "square", 4, 8, 8)
    args = ["metrics", "--network", snapshot, "--data", square, "--metrics", "fid50k_full", "--num-gen", "4"]
    result = CliRunner().invoke(main, [*map(str, args), "--outdir", str(tmp_path / "out"), "--workers", "0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "(C, H, W) = (3, 8, 16)" in result.output and "(3, 8, 8)" in result.output


def test_swd_of_non_square_image_sets_compares_each_level_by_width_and_height(tmp_path):
    real = _pngs(tmp_path / "real", 2, 64, 32, seed=1)  # 64 wide: levels until the short side is 16
    same = compute_metric("swd16k", real=real, fake=real, num_gen=2, progress=False)["results"]
    assert set(same) == {"swd16k_64x32", "swd16k_32x16", "swd16k_avg"} and same["swd16k_avg"] == pytest.approx(0)
    tall = _pngs(tmp_path / "tall", 2, 32, 64, seed=2)
    with pytest.raises(UserError, match=r"--fake's images are \(C, H, W\) = \(3, 64, 32\) .* same channels and size"):
        compute_metric("swd16k", real=real, fake=tall, num_gen=2, progress=False)


def test_patch_corners_cover_each_dimension_and_keep_the_square_draws():
    g = torch.Generator().manual_seed(3)
    corners = torch.cat([swd.patch_corners(g, 8, 16) for _ in range(20)])  # spans 2 (rows) and 10 (columns)
    assert set(corners[:, 0].tolist()) == {0, 1} and set(corners[:, 1].tolist()) == set(range(10))
    tall = torch.cat([swd.patch_corners(g, 32, 16) for _ in range(20)])
    assert tall[:, 0].max() == 25 and tall[:, 1].max() == 9
    square = swd.patch_corners(torch.Generator().manual_seed(4), 16, 16)
    assert torch.equal(square, torch.randint(10, (128, 2), generator=torch.Generator().manual_seed(4)))
    assert [b.shape[-2:] for b in swd.laplacian_pyramid(torch.rand(1, 3, 32, 64), 2)] == [(32, 64), (16, 32)]


def test_ppl_of_a_non_square_generator_sees_the_whole_frame_and_says_so(tmp_path):
    vgg16 = save_stand_in(tmp_path / "vgg16.pt")
    record = compute_metric("ppl_zfull", generator=_generator(TALL), device="cpu", num_gen=4, batch_size=4,
                            vgg16=vgg16, progress=False)  # fmt: skip
    assert math.isfinite(record["value"]) and record["value"] > 0
    assert record["protocol"].startswith("karras2019-ppl: slerp of unit z, t~U[0,1)")  # its own path and t
    assert "whole non-square frame" in record["protocol"] and "face crop" not in record["protocol"]
    square = compute_metric("ppl_wend", generator=_generator((1, 1)), device="cpu", num_gen=4, batch_size=4,
                            vgg16=vgg16, progress=False)  # fmt: skip
    assert "face crop" in square["protocol"]
    # a 1024 x 512 frame: blocks of 2 x 2 (the short side to 256), nothing cropped
    frame = torch.rand([1, 1, 512, 1024], dtype=torch.float64) * 2 - 1
    out = lpips_pixels(frame, 512)
    assert out.shape == (1, 1, 256, 512)
    assert float(out[0, 0, 100, 300]) == pytest.approx((float(frame[0, 0, 200:202, 600:602].mean()) + 1) * 127.5)


def test_the_projectors_downsampling_keeps_the_aspect():
    assert area_downsample(torch.rand(1, 3, 1024, 512)).shape == (1, 3, 512, 256)
    assert area_downsample(torch.rand(1, 3, 512, 512)).shape == (1, 3, 256, 256)
    assert area_downsample(torch.rand(1, 3, 128, 256)).shape == (1, 3, 128, 256)  # short side already 256 or less


def test_inceptions_input_resize_stretches_any_shape_to_299_square():
    x = torch.rand(2, 3, 8, 16, dtype=torch.float64)
    resized = inception.tf1_bilinear_resize(x, inception.INCEPTION_SIZE)
    assert resized.shape == (2, 3, 299, 299)
    rows = inception.tf1_bilinear_matrix(8, 299).to(x)
    cols = inception.tf1_bilinear_matrix(16, 299).to(x)
    torch.testing.assert_close(resized, torch.einsum("yh,nchw,xw->ncyx", rows, x, cols))
