"""`ganforge export` of a non-square StyleGAN2 (aspect (rows, cols)): the ONNX model's output is [N, C, H, W] (or
[N, H, W, C] uint8) with H != W, equal to the eager generator, its noise inputs are the layers' H x W maps, the card
states both sides, and the FID check runs on the non-square images."""

import json

import numpy as np
import pytest
import torch
from export_helpers import export, tiny_snapshot

from ganforge.data.loader import to_uint8
from ganforge.metrics import inception
from ganforge.snapshot import load_snapshot

onnxruntime = pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")
pytest.importorskip("onnx", reason="the export extra is not installed: pip install '.[export]'")

TINY = dict(resolution=8, channel_base=64, channel_max=8)  # 16 x 8 or 8 x 16 px: a quick export


def run_onnx(path, **feeds) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {name: x.numpy() for name, x in feeds.items()})[0]


class SmallFeatures(torch.nn.Module):
    """Stands in for Inception in the FID check: 16 features, a fixed random projection of the pixels (the Frechet
    distance of 2048 takes seconds); records the shape of the images it is given."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        assert images.dtype == torch.uint8
        self.seen.add(tuple(images.shape[1:]))
        x = images.flatten(1).to(torch.float32) / 255
        return x @ torch.randn(x.shape[1], inception.FEATURE_DIM, generator=torch.Generator().manual_seed(0))


def test_a_wide_generator_exports_nchw_images_equal_to_eager_and_passes_the_fid_check(tmp_path, monkeypatch):
    features = SmallFeatures()
    monkeypatch.setattr(inception, "FEATURE_DIM", 16)
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: features)
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", aspect=(1, 2), **TINY)
    out = tmp_path / "G.onnx"
    result = export("--network", snapshot, "--out", out, "--check", "4", "--check-fid", "6", "--max-fid-delta", "50")
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "G.onnx.json").read_text())
    assert card["output"]["shape"] == ["batch", 3, 8, 16] and card["source"]["config"]["aspect"] == [1, 2]
    assert card["check"]["passed"] and card["check"]["fid_images"] == 6 and features.seen == {(3, 8, 16)}
    assert card["check"]["fid_delta"] == pytest.approx(0, abs=1e-3)  # fp32: the same images, the same distance
    G, _ = load_snapshot(snapshot)
    z = torch.randn(3, G.z_dim, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = G(z, torch.zeros(3, 0), noise_mode="const").numpy()
    got = run_onnx(out, z=z)
    assert got.shape == (3, 3, 8, 16) and np.abs(got - expected).max() <= card["check"]["limits"]["max_abs_diff"]


def test_a_tall_generator_with_noise_inputs_and_uint8_output(tmp_path):
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", aspect=(2, 1), **TINY)
    out = tmp_path / "models" / "tall" / "G.onnx"  # a folder not made yet: export makes it, as generate does
    result = export("--network", snapshot, "--out", out, "--noise", "input", "--uint8", "--check", "4")
    assert result.exit_code == 0, result.output
    card = json.loads(out.with_name("G.onnx.json").read_text())
    assert card["output"]["shape"] == ["batch", 16, 8, 3] and card["output"]["dtype"] == "uint8"
    shapes = {spec["name"]: spec["shape"] for spec in card["inputs"]}
    assert shapes["noise_b4_conv1"] == ["batch", 1, 8, 4] and shapes["noise_b8_conv1"] == ["batch", 1, 16, 8]
    G, _ = load_snapshot(snapshot)
    z = torch.randn(2, G.z_dim, generator=torch.Generator().manual_seed(2))
    names = [name for name in shapes if name.startswith("noise_")]
    maps = {name: torch.zeros(2, *shapes[name][1:]) for name in names}  # zero noise: the network without noise
    with torch.no_grad():
        expected = to_uint8(G(z, torch.zeros(2, 0), noise_mode="none")).permute(0, 2, 3, 1).numpy()
    got = run_onnx(out, z=z, **maps)
    assert got.shape == (2, 16, 8, 3) and np.abs(got.astype(int) - expected.astype(int)).max() <= 1
