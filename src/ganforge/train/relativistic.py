"""R3GAN's training phases (Huang et al. 2024, "The GAN is dead; long live the GAN! A Modern GAN Baseline", Sec. 2 and
the released training loop): each step trains D, then G, on the relativistic pairing loss (RpGAN), with both
zero-centred gradient penalties, R1 on reals and R2 on fakes, at every D step (no lazy regularisation). The G phase
needs reals too: its loss compares each fake with a real.

The penalties differentiate D through the augmentation, as R1 does in ganforge's StyleGAN2 phases and in the released
code (which penalises the gradient with respect to the images before augmenting them).
"""

import torch

from ganforge.config import Config
from ganforge.nets.configured import frozen_parameters
from ganforge.stat_names import (
    LOSS_D,
    LOSS_D_R1,
    LOSS_D_R2,
    LOSS_G,
    SCORES_FAKE,
    SCORES_FAKE_D,
    SCORES_REAL,
    SCORES_REAL_G,
)
from ganforge.train import loss as L
from ganforge.train.phases import MicroBatch, Network, Phase, Trainer, make_network
from ganforge.train.precision import Precision


def g_main(trainer: Trainer, mb: MicroBatch):
    """softplus(D(x) - D(G(z))) per pair; D's weights are constants of this phase and the reals need no gradient."""
    fakes, _ = trainer.generate(mb)
    fake_logits, real_logits = trainer.discriminate_pair(fakes, mb.real, mb)
    loss = L.g_relativistic(fake_logits, real_logits)
    return loss, {LOSS_G: loss, SCORES_FAKE: fake_logits, SCORES_REAL_G: real_logits}


def d_main(trainer: Trainer, mb: MicroBatch):
    """softplus(D(G(z)) - D(x)) + gamma/2 (||grad D(x)||^2 + ||grad D(G(z))||^2) per pair (Eq. 2 and 3)."""
    with torch.no_grad():
        fakes, _ = trainer.generate(mb, update_emas=False)
    fakes, reals = fakes.detach().requires_grad_(True), mb.real.detach().requires_grad_(True)
    # R1 and R2 differentiate D's gradients, which compiled graphs do not support: D runs eagerly in this phase
    fake_logits, real_logits = trainer.discriminate_pair(fakes, reals, mb, main=False)
    if trainer.ada is not None:
        trainer.ada.accumulate(real_logits.detach())
    r1, r2 = L.zero_centred_penalties((real_logits, fake_logits), (reals, fakes), mb.gamma)
    loss = L.d_relativistic(real_logits, fake_logits)
    stats = {LOSS_D: loss, LOSS_D_R1: r1, LOSS_D_R2: r2}
    return loss + r1 + r2, stats | {SCORES_REAL: real_logits, SCORES_FAKE_D: fake_logits}


def build_phases(
    cfg: Config, G: torch.nn.Module, D: torch.nn.Module, precision: Precision
) -> tuple[dict[str, Network], list[Phase]]:
    """D, then G, each with its Adam (betas annealed per step by the schedule), every step."""
    frozen = frozen_parameters(G, D, cfg.optim.freeze_d, cfg.optim.freeze_g_mapping)
    networks = {
        "D": make_network(cfg, precision, "D", D, frozen["D"], cfg.optim.d_lr, 1.0),
        "G": make_network(cfg, precision, "G", G, frozen["G"], cfg.optim.g_lr, 1.0),
    }
    phases = [
        Phase(name="D_main", network=networks["D"], lr=cfg.optim.d_lr, interval=1, terms=d_main,
              samples_per_mb=lambda b: b),
        Phase(name="G_main", network=networks["G"], lr=cfg.optim.g_lr, interval=1, terms=g_main,
              samples_per_mb=lambda b: b),
    ]  # fmt: skip
    return networks, phases
