"""Building what a run trains with from its Config: the runtime (device, precision policy, datasets), the networks,
the Trainer and its phases.

`build_runtime` runs once per run (`ganforge.train.command.run`); the loop and the sample grids share what it opened.
"""

import copy
from dataclasses import dataclass

import torch

from ganforge.augment.diffaugment import DiffAugment
from ganforge.augment.pipe import AdaptiveAugment, AugmentPipe
from ganforge.config import Config
from ganforge.data import ImageDataset, open_dataset
from ganforge.devices import pick_kernels
from ganforge.families import family_of
from ganforge.monitor.probe import Probe
from ganforge.nets import Discriminator, Generator, StyleGAN3Generator
from ganforge.nets.configured import make_networks
from ganforge.nets.kernels import kernel_ops, use_kernels
from ganforge.train import relativistic
from ganforge.train.phases import Phase, Trainer, build_phases
from ganforge.train.precision import Precision
from ganforge.train.schedules import magnitude_ema_beta

# Each family's phases, by the loss its record names.
PHASES = {"stylegan2": build_phases, "relativistic": relativistic.build_phases}


@dataclass(frozen=True)
class Runtime:
    """What a run builds once from its Config and hands to the training loop."""

    device: torch.device
    precision: Precision
    dataset: ImageDataset  # the training images: with --mirror's flipped copies, labels only with --cond
    metric_reals: ImageDataset | None  # what --metrics compares with: the images as stored; None without --metrics


def build_runtime(cfg: Config, device: torch.device) -> Runtime:
    """The precision policy and the datasets, each made once for the whole run."""
    dataset = open_dataset(cfg.data.path, mirror=cfg.data.mirror, labels=cfg.data.cond)
    assert dataset.label_dim == cfg.data.label_dim, (dataset.label_dim, cfg.data.label_dim)
    metric_reals = open_dataset(cfg.data.path) if cfg.run.metrics else None
    return Runtime(device, Precision.from_config(cfg, device), dataset, metric_reals)


def build_networks(
    cfg: Config, device: torch.device, precision: Precision | None = None
) -> tuple[Generator | StyleGAN3Generator, Discriminator]:
    """G (StyleGAN2 or the alias-free StyleGAN3) and D initialised from the seed alone, so every rank starts from the
    same weights; `precision` (the run's, else one made from `cfg`) gives their memory format and whether their blocks
    recompute activations in backward; --kernels, which implementation of the fused ops they call."""
    precision = Precision.from_config(cfg, device) if precision is None else precision
    torch.manual_seed(cfg.schedule.seed)
    G, D = make_networks(cfg)
    if precision.device.type == "cpu":  # the CPU's fast paths, chosen once here (the networks stay a reference)
        G.use_cpu_kernels()
        D.use_cpu_kernels()
    kernels, _ = pick_kernels(cfg.runtime.kernels, precision.device.type, precision.compiling)
    use_kernels(kernel_ops(kernels), G, D)
    if precision.grad_checkpoint:
        assert family_of(cfg.model.generator).recomputes, "resolve refuses --grad-checkpoint where it cannot"
        G.synthesis.grad_checkpoint = D.grad_checkpoint = True
    memory_format = precision.memory_format
    return G.to(device, memory_format=memory_format).train(), D.to(device, memory_format=memory_format).train()


def build_augment(cfg: Config, device: torch.device) -> tuple[torch.nn.Module | None, AdaptiveAugment | None]:
    """(what augments every image D sees, the ADA controller that tunes its p), each None when not used."""
    a = cfg.augment
    if a.mode == "ada":
        pipe = AugmentPipe(a.pipe).to(device)
        return pipe, AdaptiveAugment(target=a.target, speed_kimg=a.ada_kimg, interval=a.ada_interval)
    if a.mode == "fixed":
        return AugmentPipe(a.pipe, p=a.p).to(device), None
    if a.mode == "diffaug":
        return DiffAugment(a.diffaug_policy), None
    return None, None


def build(
    cfg: Config,
    device: torch.device,
    precision: Precision | None = None,
    networks: tuple | None = None,
    probe: Probe | None = None,
) -> tuple[Trainer, list[Phase], Generator]:
    """The Trainer (networks, augmentation, precision), the phase list, and the EMA generator. `precision` is the
    run's policy; None makes one from `cfg` (for callers outside a run: tests, the bench). `networks`: (G, D) made
    already (the memory trace's, on fake tensors), else built here. `probe`: what times the step's sections for the
    run's monitor; None, a probe that times nothing."""
    precision = Precision.from_config(cfg, device) if precision is None else precision
    G, D = build_networks(cfg, device, precision) if networks is None else networks
    G_ema = copy.deepcopy(G).eval().requires_grad_(False)
    augment, ada = build_augment(cfg, device)
    family = family_of(cfg.model.generator)
    magnitude_beta = magnitude_ema_beta(cfg.schedule.batch, cfg.accumulation) if family.magnitude_ema else None
    networks, phases = PHASES[family.loss](cfg, G, D, precision)
    trainer = Trainer(
        cfg=cfg,
        G=G,
        D=D,
        networks=networks,
        precision=precision,
        augment=augment,
        ada=ada,
        pl_mean=torch.zeros([], device=device),
        synthesis_main=precision.compiled(G.synthesis),
        D_main=precision.compiled(D),
        magnitude_beta=magnitude_beta,
        probe=Probe() if probe is None else probe,
    )
    return trainer, phases, G_ema
