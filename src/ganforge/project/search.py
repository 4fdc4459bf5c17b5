"""Finding the latent that makes G reproduce a target image: the official projector's algorithm (StyleGAN2, Karras et
al. 2020, Sec. 5 and App. D), for a batch of targets at once, in W (one w for every layer) or W+ (one per layer).

Each target has its own w, its own noise maps and its own random stream; Adam's update is elementwise, so optimising
a batch is optimising each target alone. The loss of a target is its perceptual distance to the target image plus
the noise maps' autocorrelation penalty (App. D: at every scale down to 8x8, the squared mean product of each map with
itself shifted by one pixel, horizontally and vertically), weighted by NOISE_REGULARIZATION.
"""

import dataclasses
import math

import torch
import torch.nn.functional as F

from ganforge.metrics.perceptual import area_downsample, squared_distance
from ganforge.nets.noise import noise_buffer_names, per_image_noise
from ganforge.progress import Stage
from ganforge.project import options as settings

W_AVG_SEED = 123  # the latents whose w give the start are the same for every run, as in the official projector
_MAPPING_CHUNK = 1000  # latents mapped at a time when estimating w's mean and spread


@dataclasses.dataclass(frozen=True)
class Projection:
    """The result for a batch of B targets: ws [B, num_ws, w_dim]; the optimised noise maps by buffer name,
    [B, H, W] each (empty for StyleGAN3, which has no noise inputs); the perceptual distance at every step
    [steps, B]; and, when kept (for a video), the w being optimised after every step [steps, B, rows, w_dim]."""

    ws: torch.Tensor
    noise: dict[str, torch.Tensor]
    distances: torch.Tensor
    history: torch.Tensor | None


def w_statistics(G, c: torch.Tensor, samples: int = settings.W_AVG_SAMPLES) -> tuple[torch.Tensor, float]:
    """The mean w [w_dim] of `samples` mapped latents (class `c` [1, c_dim]), and their spread: the root mean squared
    distance to the mean, over all w's entries together (the scale of the noise added to w)."""
    generator = torch.Generator().manual_seed(W_AVG_SEED)
    device = c.device
    total, square_total = torch.zeros(G.w_dim, dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    chunks = []
    with torch.no_grad():
        for start in range(0, samples, _MAPPING_CHUNK):
            count = min(_MAPPING_CHUNK, samples - start)
            z = torch.randn([count, G.z_dim], generator=generator).to(device)
            w = G.mapping(z, c.expand(count, -1))[:, 0].double().cpu()  # every row of ws is the same w
            chunks.append(w)
            total += w.sum(0)
    mean = total / samples
    for w in chunks:
        square_total += (w - mean).square().sum()
    return mean.float(), math.sqrt(square_total.item() / samples)


def schedule(step: int, steps: int) -> tuple[float, float]:
    """(learning-rate factor, w-noise factor) at `step`: the rate rises linearly over the first LR_RAMPUP of the
    steps and falls by half a cosine over the last LR_RAMPDOWN; the noise falls quadratically to 0 at W_NOISE_RAMP."""
    t = step / steps
    noise = max(0.0, 1.0 - t / settings.W_NOISE_RAMP) ** 2
    down = min(1.0, (1.0 - t) / settings.LR_RAMPDOWN)
    rate = (0.5 - 0.5 * math.cos(down * math.pi)) * min(1.0, t / settings.LR_RAMPUP)
    return rate, noise


def noise_penalty(maps: list[torch.Tensor]) -> torch.Tensor:
    """[B] autocorrelation penalty of each target's noise maps [B, 1, H, W] (StyleGAN2 App. D): over a pyramid down
    to 8x8 (a non-square map: until its short side is 8), the squared mean of each map times itself rolled by one pixel,
    along x and along y."""
    total = 0
    for level in maps:
        while True:
            total = total + (level * level.roll(1, dims=3)).mean((1, 2, 3)).square()
            total = total + (level * level.roll(1, dims=2)).mean((1, 2, 3)).square()
            if min(level.shape[2:]) <= 8:
                break
            level = F.avg_pool2d(level, kernel_size=2)
    return total


def to_features_range(images: torch.Tensor) -> torch.Tensor:
    """G's output in [-1, 1] -> pixels in [0, 255], at most 256 px (as the official projector feeds VGG16)."""
    return area_downsample((images + 1) * 127.5)


def project(
    G,
    targets: torch.Tensor,
    features,
    *,
    space: str,
    steps: int,
    c: torch.Tensor,
    generators: list[torch.Generator],
    keep_history: bool = False,
    stage: Stage | None = None,
) -> Projection:
    """Project uint8 `targets` [B, C, R, R] into G's latent space (`space` w or wplus) with `steps` steps of the
    official algorithm; `features` is the perceptual feature network (metrics/perceptual.py), `c` the class [1, c_dim],
    `generators` one random stream per target (its noise maps' start, the noise added to w)."""
    device, batch = c.device, targets.shape[0]
    w_avg, w_std = w_statistics(G, c)
    rows = G.num_ws if space == "wplus" else 1
    w_opt = w_avg.to(device).expand(batch, rows, -1).clone().requires_grad_(True)  # [B, rows, w_dim]
    maps = _initial_noise(G, generators, device)
    optimizer = torch.optim.Adam([w_opt, *maps.values()], betas=(0.9, 0.999), lr=settings.LEARNING_RATE)
    with torch.no_grad():
        target_features = features(area_downsample(targets.to(device, torch.float32)))
    distances = torch.zeros([steps, batch])
    history = torch.zeros([steps, batch, rows, G.w_dim]) if keep_history else None
    with per_image_noise(G, maps):
        for step in range(steps):
            rate, noise_factor = schedule(step, steps)
            for group in optimizer.param_groups:
                group["lr"] = settings.LEARNING_RATE * rate
            w_noise = torch.stack([torch.randn(w_opt.shape[1:], generator=g) for g in generators]).to(device)
            ws = (w_opt + w_noise * (w_std * settings.W_NOISE * noise_factor)).expand(-1, G.num_ws, -1)
            images = G.synthesis(ws, noise_mode="const", force_fp32=True)
            distance = squared_distance(features(to_features_range(images)), target_features)
            loss = distance + noise_penalty(list(maps.values())) * settings.NOISE_REGULARIZATION
            optimizer.zero_grad(set_to_none=True)
            loss.sum().backward()  # the targets' losses are independent: the sum's gradient is each one's own
            optimizer.step()
            _normalise(maps.values())
            distances[step] = distance.detach().cpu()
            if history is not None:
                history[step] = w_opt.detach().cpu()
            if stage is not None:
                stage.update()
    ws = w_opt.detach().expand(-1, G.num_ws, -1).contiguous()
    noise = {name: value.detach()[:, 0] for name, value in maps.items()}
    return Projection(ws, noise, distances, history)


def _initial_noise(G, generators: list[torch.Generator], device) -> dict[str, torch.Tensor]:
    """Per-target noise maps [B, 1, H, W] drawn from each target's stream, to be optimised."""
    maps = {}
    for name in noise_buffer_names(G):
        shape = G.synthesis.get_buffer(name).shape  # [H, W]
        drawn = torch.stack([torch.randn(shape, generator=g) for g in generators]).unsqueeze(1)
        maps[name] = drawn.to(device).requires_grad_(True)
    return maps


@torch.no_grad()
def _normalise(maps) -> None:
    """Each target's noise map back to zero mean and unit variance after every step, as the official projector."""
    for level in maps:
        level -= level.mean((1, 2, 3), keepdim=True)
        level *= level.square().mean((1, 2, 3), keepdim=True).rsqrt()


@torch.no_grad()
def render(G, ws: torch.Tensor, noise: dict[str, torch.Tensor]) -> torch.Tensor:
    """G's images [B, C, R, R] in [-1, 1] for ws [B, num_ws, w_dim] with the per-image noise maps [B, H, W]."""
    with per_image_noise(G, {name: value.unsqueeze(1) for name, value in noise.items()}):
        return G.synthesis(ws, noise_mode="const", force_fp32=True)
