"""Perceptual distances between images, for projection (`ganforge project`) and perceptual path length (PPL).

Each distance is a feature map `features(images) -> [N, F]` whose squared Euclidean distance is the perceptual
distance, as the official projector and PPL use NVlabs' VGG16: `(features(a) - features(b)).square().sum(1)`.
Images come in as float [N, C, H, W] in [0, 255] (C = 1 or 3), the convention of the official code.

- `vgg16`: NVlabs' VGG16 LPIPS file (`vgg16.pt`, the TorchScript that the official projector and PPL download), loaded
  with `torch.jit.load` from a path the user gives, never unpickled; called as the official code calls it
  (`resize_images=False, return_lpips=True`): LPIPS (Zhang et al. 2018) with its learned channel weights.
- `inception`: works offline, from the TF-FID Inception network the `fid` extra ships (metrics/inception.py). Five
  depths of it (conv_2, conv_4, mixed_2, mixed_7, mixed_10: 147 down to 8 px), each feature vector scaled to unit
  length over its channels and the squared differences averaged over positions and summed over depths: LPIPS's
  equation 1 with every channel weight 1 (the learned weights exist for VGG and AlexNet only). Not the official
  distance: values are not comparable with VGG16's, and PPL under it has a name of its own.
- `none`: the pixels, as the mean squared difference in [-1, 1] units.
"""

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from ganforge.errors import UserError
from ganforge.metrics import inception
from ganforge.metrics.torchscript import load_user_script

INCEPTION_DEPTHS = ("conv_2", "conv_4", "mixed_2", "mixed_7", "mixed_10")
VGG16_MAX_BYTES = 2**31  # NVlabs' vgg16.pt is about 0.5 GB; a file several times that is not it
_PROBE_SIDE = 64  # a probe image the distance must accept, to refuse a file that is no feature network at load time


class PixelFeatures(torch.nn.Module):
    """The image itself: squared distance = mean squared difference of pixels in [-1, 1]."""

    name = "pixels"

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images / 127.5 - 1
        return x.flatten(1) / math.sqrt(x[0].numel())


class InceptionDepthFeatures(torch.nn.Module):
    """Unit-normalised features of five depths of the TF-FID Inception, each weighted by 1 / sqrt(positions), so that
    the squared distance is LPIPS's eq. 1 with unit channel weights (see the module docstring)."""

    name = "inception-lpips-unit"

    def __init__(self, net: torch.jit.ScriptModule):
        super().__init__()
        self.layers = net.net.layers  # the TorchScript's Sequential: conv, conv_1, ..., mixed_10, pool2

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images
        x = (inception.tf1_bilinear_resize(x, inception.INCEPTION_SIZE) - 128) / 128  # the FID protocol's input
        parts, wanted = [], set(INCEPTION_DEPTHS)
        for name, layer in self.layers.named_children():
            x = layer(x)
            if name in wanted:
                unit = x / (x.square().sum(1, keepdim=True) + 1e-10).sqrt()  # [N, C, H, W], unit length over C
                parts.append(unit.flatten(1) / math.sqrt(x.shape[2] * x.shape[3]))
                if len(parts) == len(INCEPTION_DEPTHS):
                    break
        return torch.cat(parts, dim=1)


class VGG16Features(torch.nn.Module):
    """NVlabs' VGG16 LPIPS TorchScript, called as the official projector and PPL call it."""

    name = "vgg16-lpips"

    def __init__(self, net: torch.jit.ScriptModule):
        super().__init__()
        self.net = net

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images
        return self.net(x, resize_images=False, return_lpips=True)


def load_perceptual(choice: str, device: torch.device, inception_path: str | Path | None = None) -> torch.nn.Module:
    """The feature network of `--perceptual CHOICE` (inception, none, or a path to NVlabs' vgg16.pt) on `device`,
    frozen; UserError naming the file and the fix when it is unusable."""
    if choice == "none":
        return PixelFeatures()
    if choice == "inception":
        net = inception.load_inception(inception_path, device).net
        return _frozen(InceptionDepthFeatures(net), device)
    fix = "pass NVlabs' vgg16.pt (the official projector's), or --perceptual inception to work offline"
    return load_vgg16(Path(choice), device, "--perceptual", fix)


def _frozen(module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    return module.eval().requires_grad_(False).to(device)


def load_vgg16(path: Path, device: torch.device, flag: str, fix: str) -> VGG16Features:
    """NVlabs' VGG16 LPIPS file given with `flag`, frozen on `device`, probed so that another file (a TorchScript
    that is no such network, or anything else) is one clear error naming `fix`."""
    features = _frozen(VGG16Features(load_user_script(path, flag, VGG16_MAX_BYTES, fix, device)), device)
    probe = torch.zeros([2, 3, _PROBE_SIDE, _PROBE_SIDE], device=device)
    try:
        with torch.no_grad():
            out = features(probe)
    except (RuntimeError, TypeError, ValueError) as error:
        raise UserError(
            f"{flag} {path}: does not take (images, resize_images=False, return_lpips=True) as VGG16's LPIPS file "
            f"does ({str(error).splitlines()[0][:120]}); {fix}"
        ) from None
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != 2 or not out.isfinite().all():
        raise UserError(f"{flag} {path}: does not give one finite feature vector per image; {fix}")
    return features


def squared_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[N] perceptual distances between two feature batches (the official `(a - b).square().sum()` per image)."""
    return (a - b).square().sum(1)


def area_downsample(images: torch.Tensor, side: int = 256) -> torch.Tensor:
    """Images larger than `side` brought to it by area averaging, as the official projector does before VGG16 (which
    was trained on 224 px images); smaller ones as they are. A non-square image's short side becomes `side` and the
    long one keeps the aspect, rather than squeezing the image into a square."""
    height, width = images.shape[2:]
    short = min(height, width)
    if short <= side:
        return images
    return F.interpolate(images, size=(height * side // short, width * side // short), mode="area")
