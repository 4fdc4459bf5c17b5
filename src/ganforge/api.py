"""ganforge from Python: any network ganforge reads, as one object to use in a notebook or a script.

    import ganforge
    G = ganforge.load("ffhq.pkl")  # a snapshot, an NVlabs (PyTorch or TF-era), R3GAN or rosinality file, a run folder
    images = G.images(seeds=range(8), psi=0.7)            # uint8 [8, H, W, C]: the pixels `ganforge generate` writes
    ws = G.w(seeds=[1, 2], psi=0.7)                       # [2, num_ws, w_dim]
    steps = torch.linspace(0, 1, 8)[:, None, None]
    walk = G.synthesize(ws[:1] + steps * (ws[1:] - ws[:1]))  # a latent walk in W: uint8 [8, H, W, C]
    w = G.project("face.png", steps=300)                  # a real image's [1, num_ws, w_dim]
    G = G.to("cuda")

The methods are the ones the commands use (the seed convention of NVlabs' generate.py, the truncation, the noise
modes, StyleGAN3's translation and rotation, the official projector), so a seed gives the same pixels here as in
`ganforge generate` with the same options. Bad input raises `ganforge.errors.UserError`, naming the argument.
"""

import io
import math
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.data.loader import to_uint8
from ganforge.devices import pick_device
from ganforge.errors import UserError
from ganforge.generate.labels import network_problems, one_vector
from ganforge.generate.latents import z_from_seeds
from ganforge.generate.render import Renderer, map_latents
from ganforge.interop import load_network
from ganforge.metrics.features import position_seed
from ganforge.metrics.perceptual import load_perceptual
from ganforge.metrics.shapes import aspect, image_size
from ganforge.nets import input_transform
from ganforge.project import search
from ganforge.project.options import SEED
from ganforge.project.targets import BadImage, target_pixels

BATCH = 16  # images synthesized together: `ganforge generate`'s default --batch, so the pixels match it
NOISE_MODES = ("const", "random", "none")
MAX_SEED = 2**32 - 1  # numpy.random.RandomState's seeds


def load(path, device: str = "cpu", which: str = "G_ema") -> "Network":
    """The generator of any file or folder ganforge reads (see `ganforge.interop.load_network`), on `device`
    ("cpu", "cuda", "cuda:1" or "auto")."""
    G, meta = load_network(path, which=which, device=pick_device(device))
    return Network(G.eval().requires_grad_(False), meta)


class Network:
    """A generator and what was read about it (`meta`); `module` is the torch module itself."""

    def __init__(self, module: torch.nn.Module, meta: dict):
        self.module, self.meta = module, meta

    @property
    def device(self) -> torch.device:
        """Where its weights are."""
        return next(self.module.parameters()).device

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) of its images."""
        return image_size(self.module)

    def to(self, device) -> "Network":
        """Moves the weights to `device` ("cpu", "cuda", "cuda:1" or "auto") and returns this Network."""
        self.module.to(pick_device(str(device)))
        return self

    def w(self, seeds, psi: float = 1.0, label=None, cutoff: int | None = None) -> torch.Tensor:
        """ws [len(seeds), num_ws, w_dim] (on the CPU) of the seeds' z, truncated towards w_avg by `psi` in the first
        `cutoff` ws (all by default); `label` is a class index or a label vector for a conditional network. R3GAN has
        no mapping network: its "ws" are the latent its synthesis takes (z with the class embedding), untruncated."""
        G, seeds = self.module, _seeds(seeds)
        c = self._label(label).expand(len(seeds), -1).contiguous()
        return map_latents(G, z_from_seeds(seeds, G.z_dim), c, _number("psi", psi), cutoff, BATCH)

    def synthesize(self, ws, noise: str = "const", translate=(0.0, 0.0), rotate: float = 0.0) -> np.ndarray:
        """uint8 images [N, H, W, C] of ws [N, num_ws, w_dim] (or one [num_ws, w_dim]); `noise` const or none (random
        noise needs seeds: see `images`); StyleGAN3 networks move by `translate` (x, y in image widths) and turn by
        `rotate` degrees counter-clockwise."""
        if noise not in ("const", "none"):
            raise UserError(f"noise={noise!r}: synthesize takes const or none; images(seeds, noise='random')")
        ws = torch.as_tensor(ws, dtype=torch.float32)
        ws = ws[None] if ws.ndim == 2 else ws
        return self._render(ws, noise, list(range(len(ws))), translate, rotate)

    def images(self, seeds, psi: float = 1.0, label=None, cutoff: int | None = None, noise: str = "const",
               translate=(0.0, 0.0), rotate: float = 0.0) -> np.ndarray:  # fmt: skip
        """uint8 images [len(seeds), H, W, C] of the seeds, as `ganforge generate --seeds` makes them (the same
        pixels for the same options); `noise` const, random (drawn from each image's seed) or none."""
        if noise not in NOISE_MODES:
            raise UserError(f"noise={noise!r}: choose one of {', '.join(NOISE_MODES)}")
        seeds = _seeds(seeds)
        return self._render(self.w(seeds, psi, label, cutoff), noise, seeds, translate, rotate)

    def project(self, image, steps: int = 1000, space: str = "w", perceptual: str = "inception", label=None,
                seed: int = SEED) -> torch.Tensor:  # fmt: skip
        """The ws [1, num_ws, w_dim] whose image is closest to `image` (a file path, or a uint8 [H, W, C] array),
        found by the official projector's `steps` steps (`space` w or wplus; `perceptual` inception, none, or the path
        of NVlabs' vgg16.pt; `seed` the start of its random streams, the official projector's 303 by default), as
        `ganforge project` finds them."""
        G = self.module
        if space not in ("w", "wplus"):
            raise UserError(f"space={space!r}: choose w or wplus")
        if type(steps) is not int or steps < 1:
            raise UserError(f"steps={steps!r}: give a whole number >= 1")
        target = torch.from_numpy(_target(image, G))[None]
        features = load_perceptual(perceptual, self.device)
        generators = [torch.Generator().manual_seed(position_seed(_seeds([seed])[0], "project", 0))]
        with torch.enable_grad():
            found = search.project(G, target, features, space=space, steps=steps, c=self._label(label),
                                   generators=generators)  # fmt: skip
        return found.ws.cpu()

    def _label(self, label) -> torch.Tensor:
        """c [1, c_dim] on the network's device for a class index, a label vector or None."""
        c_dim = self.module.c_dim
        index = label if isinstance(label, int) and not isinstance(label, bool) else None
        if index is not None and index < 0:
            raise UserError(f"label={index}: a class index is >= 0")
        vector = None if label is None or index is not None else tuple(_number("label", x) for x in np.ravel(label))
        space = getattr(self.module, "label_space", None)  # classes or label vectors, as its run recorded
        problems = network_problems(index, vector, None, c_dim, "this network", space)
        if problems:
            raise UserError(*(problem.replace("--class", "label").replace("--label", "label") for problem in problems))
        return torch.tensor([one_vector(index, vector, c_dim)], dtype=torch.float32, device=self.device)

    def _render(self, ws: torch.Tensor, noise: str, seeds: list[int], translate, rotate) -> np.ndarray:
        tx, ty = (_number("translate", value) for value in translate)
        moved = (tx, ty) != (0.0, 0.0) or _number("rotate", rotate) != 0.0
        if moved and not hasattr(getattr(self.module, "synthesis", None), "input"):
            raise UserError("translate and rotate move StyleGAN3 networks only")
        transform = input_transform((tx, ty), math.radians(rotate)) if moved else None
        renderer = Renderer(self.module, noise, BATCH, len(ws), transform)
        images = renderer(ws, seeds)
        renderer.close()
        return to_uint8(images).permute(0, 2, 3, 1).numpy()


def _seeds(seeds) -> list[int]:
    seeds = [seeds] if isinstance(seeds, int) else list(seeds)
    bad = [s for s in seeds if type(s) not in (int, np.int64) or not 0 <= s <= MAX_SEED]
    if bad or not seeds:
        raise UserError(
            f"seeds: give whole numbers from 0 to {MAX_SEED}" + (f" ({bad[0]!r} is not one)" if bad else "")
        )
    return [int(s) for s in seeds]


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise UserError(f"{name}={value!r}: give a finite number")
    return float(value)


def _target(image, G) -> np.ndarray:
    """uint8 [C, H, W] of a target image (a path or an [H, W, C] array), cropped and resized as `project` does."""
    if isinstance(image, (str, Path)):
        data = Path(image).read_bytes()
    else:
        buffer = io.BytesIO()
        PIL.Image.fromarray(np.asarray(image, dtype=np.uint8).squeeze()).save(buffer, format="PNG")
        data = buffer.getvalue()
    try:
        return target_pixels(data, G.resolution, G.img_channels, aspect(G))
    except BadImage as problem:
        raise UserError(f"image: {problem}; pass an image file or a uint8 [H, W, C] array") from None
