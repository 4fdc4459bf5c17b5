"""Pivotal tuning (Roich et al. 2022, "Pivotal Tuning for Latent-based Editing of Real Images", PTI): with the
projected latent as a pivot, tune G's synthesis weights so that the pivot reproduces the target exactly, while a
locality regulariser keeps G unchanged away from the pivot.

Eq. 2: L_pt = D(x, G(w_p)) + lambda_L2 * MSE(x, G(w_p)), D the perceptual distance. Eqs. 4-6: each step draws w_z from
the mapping of a random z and moves from the pivot towards it by alpha (w_r = w_p + alpha (w_z - w_p) / ||w_z - w_p||);
L_R = D(G(w_r), G_orig(w_r)) + lambda_L2^R * MSE(G(w_r), G_orig(w_r)); the loss is L_pt + lambda_R * L_R. The noise
maps stay those the projection found (they are saved in the tuned snapshot), so that the tuned network renders the
pivot as tuned.
"""

import copy
import dataclasses

import torch
import torch.nn.functional as F

from ganforge.metrics.perceptual import area_downsample, squared_distance
from ganforge.progress import Stage
from ganforge.project import options as settings
from ganforge.project.search import to_features_range


@dataclasses.dataclass(frozen=True)
class Tuned:
    """The tuned generator (its noise maps the pivot's), and the perceptual distance to the target at every step."""

    G: torch.nn.Module
    distances: torch.Tensor  # [steps]


def tune(
    G,
    pivot: torch.Tensor,
    noise: dict[str, torch.Tensor],
    target: torch.Tensor,
    features,
    *,
    steps: int,
    c: torch.Tensor,
    generator: torch.Generator,
    stage: Stage | None = None,
) -> Tuned:
    """Tune a copy of G (G itself is left as it is) for `steps` steps around `pivot` [1, num_ws, w_dim] with the
    pivot's noise maps {name: [1, H, W]}, towards the uint8 `target` [1, C, R, R]."""
    device = pivot.device
    tuned = copy.deepcopy(G).eval().requires_grad_(False)
    with torch.no_grad():
        for name, value in noise.items():
            tuned.synthesis.get_buffer(name).copy_(value[0])
    original = copy.deepcopy(tuned)  # the starting weights with the same noise: what locality compares against
    weights = list(tuned.synthesis.parameters())
    for weight in weights:
        weight.requires_grad_(True)
    optimizer = torch.optim.Adam(weights, lr=settings.TUNE_LEARNING_RATE)
    target = target.to(device, torch.float32)
    with torch.no_grad():
        target_features = features(area_downsample(target))
    target_image = target / 127.5 - 1
    distances = torch.zeros([steps])
    for step in range(steps):
        image = tuned.synthesis(pivot, noise_mode="const", force_fp32=True)
        distance = squared_distance(features(to_features_range(image)), target_features)
        loss = distance + settings.TUNE_L2 * F.mse_loss(image, target_image)
        loss = loss + settings.LOCALITY_WEIGHT * _locality(tuned, original, pivot, features, c, generator)
        optimizer.zero_grad(set_to_none=True)
        loss.sum().backward()
        optimizer.step()
        distances[step] = distance.detach().cpu()[0]
        if stage is not None:
            stage.update()
    return Tuned(tuned.requires_grad_(False), distances)


def _locality(tuned, original, pivot: torch.Tensor, features, c: torch.Tensor, generator: torch.Generator):
    """PTI's locality term (eqs. 4-5) for one latent drawn alpha away from the pivot, towards a random w."""
    z = torch.randn([1, tuned.z_dim], generator=generator).to(pivot.device)
    with torch.no_grad():
        w_z = original.mapping(z, c)  # [1, num_ws, w_dim]
        direction = w_z - pivot
        w_r = pivot + settings.LOCALITY_ALPHA * direction / direction.norm()
        reference = original.synthesis(w_r, noise_mode="const", force_fp32=True)
        reference_features = features(to_features_range(reference))
    image = tuned.synthesis(w_r, noise_mode="const", force_fp32=True)
    distance = squared_distance(features(to_features_range(image)), reference_features)
    return distance + settings.LOCALITY_L2 * F.mse_loss(image, reference)
