"""The StyleGAN2 and R3GAN loss terms as small pure functions; each returns per-sample values so callers choose the
reduction.

References: Goodfellow et al. 2014 (non-saturating GAN loss), Mescheder et al. 2018 "Which training methods for GANs
do actually converge?" (R1), Karras et al. 2020b "Analyzing and improving the image quality of StyleGAN" (StyleGAN2:
path-length regularisation, lazy regularisation), Karras et al. 2019 (StyleGAN: style mixing), Jolicoeur-Martineau
2019 "The relativistic discriminator" and Huang et al. 2024 "The GAN is dead; long live the GAN!" (R3GAN: the
relativistic pairing loss with R1 and R2).
"""

import torch
import torch.nn.functional as F


def g_nonsaturating(fake_logits: torch.Tensor) -> torch.Tensor:
    """Generator loss -log sigmoid(D(G(z))) = softplus(-D(G(z))) (Goodfellow et al. 2014, Sec. 3, the "non-saturating"
    alternative to log(1 - D(G(z)))). [N, 1] -> [N]."""
    return F.softplus(-fake_logits).flatten()


def d_logistic(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    """Discriminator loss -log sigmoid(D(x)) - log(1 - sigmoid(D(G(z)))) = softplus(-D(x)) + softplus(D(G(z)))
    (Goodfellow et al. 2014, Eq. 1). Pairs the i-th real with the i-th fake. [N, 1], [N, 1] -> [N]."""
    return F.softplus(-real_logits).flatten() + F.softplus(fake_logits).flatten()


def g_relativistic(fake_logits: torch.Tensor, real_logits: torch.Tensor) -> torch.Tensor:
    """RpGAN's generator loss softplus(D(x) - D(G(z))) = -log sigmoid(D(G(z)) - D(x)), the i-th fake paired with the
    i-th real (Huang et al. 2024, Eq. 2 with f = softplus(-t), swapped for G; Jolicoeur-Martineau 2019, Eq. 8).
    [N, 1], [N, 1] -> [N]."""
    return F.softplus(real_logits - fake_logits).flatten()


def d_relativistic(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    """RpGAN's discriminator loss softplus(D(G(z)) - D(x)) = -log sigmoid(D(x) - D(G(z))): D wants each real above its
    paired fake (Huang et al. 2024, Eq. 2). [N, 1], [N, 1] -> [N]."""
    return F.softplus(fake_logits - real_logits).flatten()


def zero_centred_penalties(logits: tuple, images: tuple, gamma: float) -> tuple:
    """gamma/2 * ||grad_x D(x)||^2 for each (logits [N, 1], images [N, ...]) pair: R1 on reals (Mescheder et al. 2018,
    Eq. 9), R2 on fakes (Roth et al. 2017; Huang et al. 2024, Eq. 3 uses both). Each images tensor must require grad
    and its logits be computed from it; the graph is kept so the penalties can be backpropagated. All pairs take one
    backward pass, which gives each its own gradient when every logit depends on its own image only (no minibatch
    statistics across the images). -> one [N] per pair."""
    grads = torch.autograd.grad(sum(x.sum() for x in logits), images, create_graph=True)
    return tuple(g.square().flatten(1).sum(1) * (gamma / 2) for g in grads)


def path_lengths(images: torch.Tensor, ws: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """||J_w^T y||_2 per sample with y ~ N(0, I) / sqrt(H*W) (StyleGAN2, Eq. 4; the 1/sqrt(H*W) keeps the length
    independent of resolution, App. B). `ws` [N, num_ws, w_dim] must require grad; `noise` has the images' shape.
    Averaged over the num_ws copies of w. -> [N]."""
    (grads,) = torch.autograd.grad((images * noise).sum(), ws, create_graph=True)
    return grads.square().sum(2).mean(1).sqrt()


def path_length_penalty(lengths: torch.Tensor, pl_mean: torch.Tensor) -> torch.Tensor:
    """(||J_w^T y|| - a)^2 with `a` the running mean of path lengths (StyleGAN2, Eq. 4). -> [N]."""
    return (lengths - pl_mean).square()


def update_pl_mean(pl_mean: torch.Tensor, mean_length: torch.Tensor, decay: float) -> torch.Tensor:
    """Exponential moving average of the path length: a <- a + decay * (mean - a) (StyleGAN2, Sec. 3.2)."""
    return pl_mean.lerp(mean_length, decay)


def mixing_cutoffs(u_mix: torch.Tensor, u_cut: torch.Tensor, num_ws: int, prob: float) -> torch.Tensor:
    """Per-sample layer index where style mixing switches from w1 to w2 (StyleGAN, Sec. 3.1: "mixing regularization"):
    with probability `prob` a uniform cutoff in [1, num_ws), else num_ws (no mixing). u_* are uniform [N] draws."""
    cut = 1 + (u_cut * (num_ws - 1)).long().clamp(max=num_ws - 2)
    return torch.where(u_mix < prob, cut, torch.full_like(cut, num_ws))


def mix_styles(ws1: torch.Tensor, ws2: torch.Tensor, cutoffs: torch.Tensor) -> torch.Tensor:
    """Layers >= cutoff take their style from ws2. ws [N, num_ws, w_dim], cutoffs [N] -> [N, num_ws, w_dim]."""
    layer = torch.arange(ws1.shape[1], device=ws1.device)
    take_second = layer[None, :, None] >= cutoffs.to(ws1.device)[:, None, None]  # [N, num_ws, 1]
    return torch.where(take_second, ws2, ws1)
