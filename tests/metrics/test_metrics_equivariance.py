"""Equivariance metrics: constructed generators (exactly equivariant, StyleGAN2, StyleGAN3), the image-space
operators on signals with known answers, the oriented filter against a direct evaluation, and the CLI."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from torch import nn

from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.metrics import compute_metric, compute_metrics
from ganforge.metrics.equivariance import (
    bandlimit_filter,
    pseudo_rotate,
    rotate,
    rotation_motion,
    translate_fractional,
    translate_integer,
)
from ganforge.nets import Generator, StyleGAN3Generator
from ganforge.nets.mapping import MappingNetwork
from ganforge.nets.stylegan3_layers import Band, SynthesisInput
from ganforge.snapshot import save_snapshot

EQ = ["eqt50k_int", "eqt50k_frac", "eqr50k"]
OPTIONS = dict(device="cpu", progress=False)


class FourierSynthesis(nn.Module):
    """Exactly equivariant: the image is a band-limited function (StyleGAN3's Fourier input, 3 channels) sampled
    at the output pixels through the input transform."""

    def __init__(self, resolution, bandwidth):
        super().__init__()
        self.input = SynthesisInput(8, Band(resolution, resolution, bandwidth, 0.0, 3))
        with torch.no_grad():
            self.input.affine.weight.normal_()

    def forward(self, ws, noise_mode="random", transform=None):
        return self.input(ws[:, 0], transform)


class ShiftedConstSynthesis(nn.Module):
    """A StyleGAN2 synthesis network whose 4x4 constant input is resampled (bilinear) through the input
    transform: the closest StyleGAN2 gets to a transformable input."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, ws, noise_mode="random", transform=None):
        net = self.net
        x = net.b4.const[None].expand(ws.shape[0], -1, -1, -1)
        if transform is not None:
            theta = transform.expand(ws.shape[0], 3, 3)[:, :2] * torch.tensor([1.0, 1.0, 2.0])  # widths -> [-1, 1]
            x = F.grid_sample(x, F.affine_grid(theta, list(x.shape), align_corners=False), align_corners=False)
        x = net.b4.conv1(x, ws[:, 0], noise_mode)
        img, w_idx = net.b4.torgb(x, ws[:, 1]), 1
        for res in net.block_resolutions[1:]:
            block = getattr(net, f"b{res}")
            x, img = block(x, img, ws[:, w_idx : w_idx + block.num_conv + 1], noise_mode)
            w_idx += block.num_conv
        return img


class Transformable(nn.Module):
    """mapping + a synthesis network that takes an input transform: what the metrics need of a generator."""

    def __init__(self, mapping, synthesis, resolution):
        super().__init__()
        self.z_dim, self.c_dim, self.resolution, self.img_channels = mapping.z_dim, 0, resolution, 3
        self.mapping, self.synthesis = mapping, synthesis


def fourier_toy(resolution=32, bandwidth=4.0) -> Transformable:
    torch.manual_seed(0)
    return Transformable(MappingNetwork(8, 0, 8, 2, num_ws=1), FourierSynthesis(resolution, bandwidth), resolution)


def stylegan2_with_input_transform() -> Transformable:
    torch.manual_seed(0)
    G = Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=8, mapping_layers=2)
    return Transformable(G.mapping, ShiftedConstSynthesis(G.synthesis), 16)


def values(G, names, num_gen=4, batch_size=4) -> dict:
    records = compute_metrics(names, generator=G, num_gen=num_gen, batch_size=batch_size, **OPTIONS)
    return {r["metric"]: r["value"] for r in records}


def test_exactly_equivariant_toy_scores_very_high():
    got = values(fourier_toy(), EQ)
    assert got["eqt50k_int"] > 90  # whole-pixel shifts of sampled sinusoids: float rounding only
    assert got["eqt50k_frac"] > 45 and got["eqr50k"] > 50  # limited by Lanczos-3 and bilinear resampling


def test_stylegan2_scores_low_eqt_and_stylegan3_high():
    sg2 = values(stylegan2_with_input_transform(), ["eqt50k_int"])["eqt50k_int"]
    torch.manual_seed(0)
    G3 = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=8)
    sg3 = values(G3.eval(), ["eqt50k_int"], num_gen=2, batch_size=2)["eqt50k_int"]
    assert sg2 < 20 and sg3 > 40, (sg2, sg3)


def test_values_do_not_depend_on_batching_and_records_need_no_reals():
    toy = fourier_toy()
    by_one = compute_metrics(["eqt50k_frac", "eqr50k"], generator=toy, num_gen=3, batch_size=1, seed=5, **OPTIONS)
    by_three = compute_metrics(["eqt50k_frac", "eqr50k"], generator=toy, num_gen=3, batch_size=3, seed=5, **OPTIONS)
    assert [r["value"] for r in by_one] == pytest.approx([r["value"] for r in by_three], rel=1e-3)  # float rounding
    assert by_one[0]["real"] is None and by_one[0]["num_fake"] == 3 and by_one[0]["num_real"] == 0
    other_seed = compute_metric("eqt50k_frac", generator=toy, num_gen=3, seed=6, **OPTIONS)["value"]
    assert other_seed != pytest.approx(by_one[0]["value"], rel=1e-2)


def test_generators_without_input_transform_and_missing_sources_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="needs a generator with an input transform"):
        compute_metric("eqt50k_int", generator=Generator(resolution=8, channel_base=64, channel_max=8), **OPTIONS)
    with pytest.raises(UserError, match="the real images to compare with are required"):
        compute_metrics(["eqr50k", "swd16k"], generator=fourier_toy(), **OPTIONS)


def test_cli_measures_a_stylegan3_snapshot_without_data(tmp_path):
    torch.manual_seed(0)
    G = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=4)
    save_snapshot(tmp_path / "g.safetensors", G, {})
    args = ["metrics", "--network", str(tmp_path / "g.safetensors"), "--metrics", "eqt50k_int", "--num-gen", "2"]
    result = CliRunner().invoke(main, [*args, "--device", "cpu"])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "metric-eqt50k_int.jsonl").read_text())
    assert record["value"] > 30 and record["protocol"].startswith("karras2021")
    result = CliRunner().invoke(main, ["metrics", "--network", str(tmp_path / "g.safetensors")])
    assert result.exit_code == 2 and "--data/--real" in result.output  # fid50k_full needs reals


# --- operators ------------------------------------------------------------------------------------------------------


def wave(shift_x=0.0, shift_y=0.0, size=32, angle=0.0) -> torch.Tensor:
    """A band-limited test image: two sinusoids (at most 0.12 cycles per pixel), moved and rotated analytically."""
    c = torch.arange(size, dtype=torch.float64) + 0.5 - size / 2  # pixel centres about the image centre
    y, x = torch.meshgrid(c, c, indexing="ij")
    cos, sin = math.cos(angle), math.sin(angle)
    u, v = cos * x - sin * y, sin * x + cos * y  # the motion's inverse applied to the output pixel
    u, v = u - shift_x, v - shift_y
    image = torch.sin(2 * math.pi * (0.11 * u + 0.05 * v) + 0.3) + 0.5 * torch.cos(2 * math.pi * (0.07 * v - 0.02 * u))
    return image[None, None].float().expand(1, 2, size, size)


def masked_psnr(a, b, mask) -> float:
    return 20 * math.log10(2) - 10 * math.log10(float(((a - b).square() * mask).sum() / mask.sum()))


def test_integer_and_fractional_translation_move_right_and_down():
    shifted, mask = translate_integer(wave(), 3 / 32, -2 / 32)
    assert torch.equal(shifted * mask, wave(3, -2) * mask) and mask[0, 0, :-2, 3:].all() and not mask[0, 0, -2:].any()
    assert mask.sum() == 2 * 30 * 29
    exact, mask = translate_fractional(wave(), 4 / 32, 1 / 32)  # whole pixels: Lanczos taps are (0, .., 1, .., 0)
    torch.testing.assert_close(exact * mask, wave(4, 1) * mask, rtol=0, atol=1e-6)
    moved, mask = translate_fractional(wave(), -1.7 / 32, 2.3 / 32)
    assert masked_psnr(moved, wave(-1.7, 2.3), mask) > 45
    assert mask[0, 0].sum() == (32 - 5) * (32 - 5) and mask[0, 0, 0].sum() == 0 and mask[0, 0, 30].sum() > 0


@pytest.mark.parametrize("angle", [math.pi / 2, 0.4, -2.5])
def test_rotation_is_counterclockwise_and_accurate_on_band_limited_images(angle):
    rotated, mask = rotate(wave(), angle)
    assert mask.sum() > 0.3 * mask.numel() and not mask[0, 0, 0].any()
    assert masked_psnr(rotated, wave(angle=angle), mask) > 40
    assert masked_psnr(rotated, wave(angle=-angle), mask) < 20  # the other direction is wrong
    filtered, mask = pseudo_rotate(wave(), angle)
    assert masked_psnr(filtered, wave(), mask) > 40  # low frequencies pass the band limit


def direct_bandlimit(angle: float, up: int, a=3, support=6, design=64) -> torch.Tensor:
    """The oriented filter from its definition, in float64 with full 2-D FFTs and the centred grid."""
    n = 2 * design * up - 1
    c = (torch.arange(n, dtype=torch.float64) - (n - 1) / 2) / up
    y, x = torch.meshgrid(c, c, indexing="ij")
    m = rotation_motion(angle).double()
    xo, yo = m[0, 0] * x + m[0, 1] * y, m[1, 0] * x + m[1, 1] * y

    def lanczos(t):
        return torch.where(t.abs() < a, torch.sinc(t / a), torch.zeros_like(t))

    def conv(p, q):  # circular convolution about the centre sample
        spectrum = torch.fft.fft2(torch.fft.ifftshift(p)) * torch.fft.fft2(torch.fft.ifftshift(q))
        return torch.fft.fftshift(torch.fft.ifft2(spectrum).real)

    f = conv(torch.sinc(x) * torch.sinc(y), torch.sinc(xo) * torch.sinc(yo))
    f = f * conv(lanczos(x) * lanczos(y), lanczos(xo) * lanczos(yo))
    k = (design - support) * up
    f = f[k:-k, k:-k]
    for py in range(up):  # each polyphase component (index mod up, counted from the cropped corner) sums 1/up^2
        for px in range(up):
            f[py::up, px::up] /= f[py::up, px::up].sum() * up**2
    return f


@pytest.mark.parametrize(("angle", "up"), [(0.7, 4), (-2.0, 1)])
def test_bandlimit_filter_equals_direct_evaluation(angle, up):
    got = bandlimit_filter(rotation_motion(angle), up)
    want = direct_bandlimit(angle, up)
    # float32 FFTs over the design grid: a few units in the last place of the peak tap, which rounds differently
    # with AVX2 and AVX512 (2.7e-7 at a peak of 1.0 seen with AVX512); any error of the design is orders larger
    tolerance = 8 * torch.finfo(torch.float32).eps * want.abs().max().item()
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tolerance)
