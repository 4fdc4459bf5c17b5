"""Counts and sizes a metric cannot work with are user errors (exit 2, one line), not assertion tracebacks."""

import numpy as np
import PIL.Image
import pytest
from click.testing import CliRunner

from ganforge.cli import main


def _folder(path, count: int, size: int):
    path.mkdir()
    for i in range(count):
        pixels = np.random.default_rng(i).integers(0, 256, (size, size, 3), dtype=np.uint8)
        PIL.Image.fromarray(pixels).save(path / f"{i}.png")
    return str(path)


@pytest.mark.parametrize(
    "metric, count, size, message",
    [
        ("pr50k3_full", 3, 8, "error: pr: 3 images, but k=3 nearest neighbours need more than 3 in each set"),
        ("kid50k_full", 1, 8, "error: kid: needs at least 2 real and 2 fake images"),
        ("swd16k", 4, 4, "size 4x4: a side is not a power of two from 8 to 1024"),  # read first
    ],
)
def test_too_few_or_too_small_images_are_user_errors(tmp_path, metric, count, size, message):
    real, fake = _folder(tmp_path / "real", count, size), _folder(tmp_path / "fake", count, size)
    args = ["metrics", "--real", real, "--fake", fake, "--metrics", metric, "--workers", "0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
