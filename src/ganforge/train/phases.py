"""GAN phases as data, so that G/D alternation and lazy regularisation are a table rather than a nest of step
tests: each phase names its network, optimiser, scaler, interval and loss terms, and `run_phase` does the rest the
same way for all of them — set the scheduled learning rate, accumulate over micro-batches, all-reduce gradients,
unscale (fp16), clip (if asked), check for non-finite values on every rank, step or skip.

Nothing in a step reads a value back to the host: whether a step is skipped, the count of non-finite steps in a row
and the path-length mean are decided on the device, and a tick reads them with its statistics in one transfer
(`tick_scalars`, `check_divergence`). On CUDA the host can then queue a whole step ahead of the device.

Randomness is a pure function of (seed, image position, phase): latents and style-mixing draws come from a generator
seeded per phase and step and are indexed by global image position; the noise inside the networks and the
augmentations come from the global RNG seeded per (phase, micro-batch slot). So a resumed run replays exactly, and
one process with A micro-batches equals A processes with one each.
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ganforge import dist
from ganforge.augment.blur import blur_images
from ganforge.config import Config, lazy_ratio
from ganforge.errors import UserError
from ganforge.monitor.probe import Probe
from ganforge.nets.attention import twice_differentiable
from ganforge.nets.configured import frozen_parameters
from ganforge.stat_names import (
    CLIPPED,
    GRAD_NORM,
    LOSS_D,
    LOSS_D_R1,
    LOSS_G,
    LOSS_G_PL,
    LR,
    PL_LENGTH,
    PL_MEAN,
    SCORES_FAKE,
    SCORES_FAKE_D,
    SCORES_REAL,
    SKIPPED,
    per_phase,
)
from ganforge.train import loss as L
from ganforge.train.grad_sync import GradientSync
from ganforge.train.precision import Precision, make_adam, nonfinite_flag, step_unless
from ganforge.train.schedules import StepPlan

MAX_NONFINITE_IN_A_ROW = 20
IN_A_ROW = "Train/nonfinite_in_a_row"  # read by a tick with its statistics, checked and removed before they are shown
RUNNING_AVERAGES = ("w_avg", "magnitude_ema")  # buffer names the generator's forward pass updates in training
_PL_PROBE_STREAM = -1  # seeds path-length probes apart from the per-step streams, which use phase indices >= 0


class DivergedError(UserError):
    """Too many non-finite steps in a row: training has diverged."""


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (seed, position, phase, slot), independent across parts."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


@dataclass
class MicroBatch:
    """One micro-batch of one phase: reals, their labels (reused for the fakes), and the fakes' random draws."""

    slot: int  # global index of this micro-batch within the step: accumulation round x world_size + rank
    real: torch.Tensor  # [b, C, H, W] in [-1, 1]
    c: torch.Tensor  # [b, c_dim]
    z: torch.Tensor  # [b, z_dim]
    z2: torch.Tensor  # [b, z_dim], second latent for style mixing
    cutoffs: torch.Tensor  # [b] layer where style mixing switches to z2
    positions: range  # the b global image positions (cur_nimg + index in the step), as Python ints
    blur_sigma: float  # blur of every image D sees in this step (StyleGAN3-R warm-up; 0: none)
    gamma: float  # weight of the gradient penalties in this step (R1; R3GAN: R1 and R2, annealed)


@dataclass
class Network:
    """One trained network and what trains it: its Adam, its loss scaler (a pass-through outside fp16), and the sync
    that sums its gradients over ranks; the network's phases share them."""

    name: str  # "G" or "D"
    module: torch.nn.Module
    params: list[torch.nn.Parameter]  # those it trains: all but the frozen ones (--freeze-d, --freeze-g-mapping)
    opt: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    sync: GradientSync
    clip: float | None  # the norm its summed, unscaled gradient is clipped to (None: not clipped)
    averages_buffers: bool  # its forward updates running averages (G's w_avg, magnitude_ema) that ranks average


@dataclass
class Trainer:
    """The state training carries from step to step: the networks with their optimisers, augmentation, the numeric
    policy, the path-length running mean and the count of non-finite steps in a row."""

    cfg: Config
    G: torch.nn.Module
    D: torch.nn.Module
    networks: dict[str, Network]  # "G", "D"
    precision: Precision
    augment: torch.nn.Module | None
    ada: object | None
    pl_mean: torch.Tensor
    synthesis_main: Callable  # compiled or eager synthesis/D for the main phases; regularisers use G/D eagerly
    D_main: Callable
    nonfinite_in_a_row: int | torch.Tensor = 0  # an int64 scalar on the device once a step has run
    magnitude_beta: float | None = None  # StyleGAN3: decay of the layers' magnitude_ema per micro-batch round
    probe: Probe = field(default_factory=Probe)  # times the step's sections for telemetry; labels them for profiling

    def generate(
        self, mb: MicroBatch, n: int | None = None, main: bool = True, update_emas: bool = True, ws_grad: bool = False
    ):
        """Fakes for the first n samples with per-sample style mixing (StyleGAN Sec. 3.1). -> (images, ws).

        update_emas: track w_avg, and in a main phase StyleGAN3's magnitude_ema (so once per micro-batch round).
        ws_grad: ws require grad also where no parameter before them does (--freeze-g-mapping), so that the images
        can be differentiated by them (path length)."""
        n = len(mb.z) if n is None else n
        ws = self.G.mapping(mb.z[:n], mb.c[:n], update_w_avg=update_emas)
        if self.cfg.loss.style_mixing > 0:
            ws2 = self.G.mapping(mb.z2[:n], mb.c[:n])
            ws = L.mix_styles(ws, ws2, mb.cutoffs[:n])
        if ws_grad and not ws.requires_grad:
            ws.requires_grad_(True)
        synthesis = self.synthesis_main if main else self.G.synthesis
        if self.magnitude_beta is not None and main and update_emas and self.G.training:
            return synthesis(ws, magnitude_ema_beta=self.magnitude_beta), ws
        if self.cfg.model.grow:  # at the stage's resolution, which D takes (nets/growth.py)
            return synthesis(ws, full_size=False), ws
        return synthesis(ws), ws

    def discriminate(self, images: torch.Tensor, mb: MicroBatch, main: bool = True) -> torch.Tensor:
        """D on blurred (StyleGAN3-R warm-up) then augmented images with the micro-batch's labels: ADA and
        DiffAugment augment every image D sees, reals and fakes, the same way, and R1 differentiates through both."""
        return (self.D_main if main else self.D)(self._prepare(images, mb.blur_sigma), mb.c)

    def discriminate_pair(self, fakes: torch.Tensor, reals: torch.Tensor, mb: MicroBatch, main: bool = True):
        """(fake logits, real logits) of D from one pass over both batches: the same values as two calls (each batch
        is augmented on its own, fakes first, and grouped on its own by the minibatch stddev). main: the compiled D
        where compiling; False for logits whose gradients are differentiated again."""
        images = torch.cat([self._prepare(fakes, mb.blur_sigma), self._prepare(reals, mb.blur_sigma)])
        return (self.D_main if main else self.D)(images, torch.cat([mb.c, mb.c]), batches=2).chunk(2)

    def _prepare(self, images: torch.Tensor, blur_sigma: float) -> torch.Tensor:
        images = blur_images(images, blur_sigma)
        return images if self.augment is None else self.augment(images)


def g_main(trainer: Trainer, mb: MicroBatch):
    img, _ = trainer.generate(mb)
    logits = trainer.discriminate(img, mb)
    loss = L.g_nonsaturating(logits)
    return loss, {LOSS_G: loss, SCORES_FAKE: logits}


def g_reg(trainer: Trainer, mb: MicroBatch):
    cfg = trainer.cfg
    with twice_differentiable():  # the penalty is a gradient, itself differentiated
        img, ws = trainer.generate(mb, n=len(mb.z) // cfg.loss.pl_batch_shrink, main=False, ws_grad=True)
    noise = torch.stack([_position_noise(cfg, p, img.shape[1:], img.device) for p in mb.positions[: len(img)]])
    lengths = L.path_lengths(img, ws, noise / (img.shape[2] * img.shape[3]) ** 0.5)
    penalty = L.path_length_penalty(lengths, trainer.pl_mean) * cfg.loss.pl_weight
    return penalty, {LOSS_G_PL: penalty, PL_LENGTH: lengths}


def d_main(trainer: Trainer, mb: MicroBatch):
    with torch.no_grad():
        img, _ = trainer.generate(mb, update_emas=False)
    fake_logits, real_logits = trainer.discriminate_pair(img, mb.real, mb)
    if trainer.ada is not None:
        trainer.ada.accumulate(real_logits.detach())
    loss = L.d_logistic(real_logits, fake_logits)
    return loss, {LOSS_D: loss, SCORES_REAL: real_logits, SCORES_FAKE_D: fake_logits}


def d_reg(trainer: Trainer, mb: MicroBatch):
    real = mb.real.detach().requires_grad_(True)
    with twice_differentiable():  # R1 is a gradient, itself differentiated
        logits = trainer.discriminate(real, mb, main=False)
    (penalty,) = L.zero_centred_penalties((logits,), (real,), mb.gamma)
    return penalty, {LOSS_D_R1: penalty}


def _position_noise(cfg: Config, position: int, shape, device) -> torch.Tensor:
    """Path-length probe y for one image position: N(0, I), the same whatever the micro-batch split."""
    gen = torch.Generator(device).manual_seed(derive_seed(cfg.schedule.seed, position, _PL_PROBE_STREAM))
    return torch.randn(shape, generator=gen, device=device)


def update_pl_mean(trainer: Trainer, stats: dict, skipped: torch.Tensor) -> None:
    """After a G_reg step, from the step's path lengths (its stats): a <- lerp(a, mean length over all ranks and
    micro-batches, decay) (StyleGAN2 Sec. 3.2), unless the step was `skipped` (then a stays bitwise as it was). The
    penalty of the step used the mean from before it, so every micro-batch and rank saw the same target."""
    lengths = stats[PL_LENGTH]
    total = dist.all_reduce_sum_(torch.stack([lengths.sum(), lengths.new_full([], len(lengths))]))
    updated = L.update_pl_mean(trainer.pl_mean, total[0] / total[1], trainer.cfg.loss.pl_decay)
    trainer.pl_mean = torch.where(skipped > 0, trainer.pl_mean, updated)


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One GAN phase: which network it trains, how often, and with which loss terms."""

    name: str
    network: Network
    lr: float  # base learning rate with the lazy-regularisation correction; the schedule scales it per step
    interval: int  # runs on every interval-th step of its network (lazy regularisation, StyleGAN2 Sec. 3.1)
    terms: Callable  # (Trainer, MicroBatch) -> (per-sample loss [n], stats dict of tensors)
    samples_per_mb: Callable[[int], int]  # micro-batch size -> samples this phase uses of it
    after_step: Callable | None = None  # (Trainer, the step's stats, skipped flag) after every step, taken or not


def build_phases(
    cfg: Config, G: torch.nn.Module, D: torch.nn.Module, precision: Precision
) -> tuple[dict[str, Network], list[Phase]]:
    """G and D, each with one Adam, scaler and gradient sync; and their phases: G main, G path length (if its weight
    > 0), D main, D R1 (if gamma > 0).

    Lazy regularisation corrects lr and betas by interval / (interval + 1) (StyleGAN2 App. C)."""
    o, lo = cfg.optim, cfg.loss
    networks, phases = {}, []
    frozen = frozen_parameters(G, D, o.freeze_d, o.freeze_g_mapping)
    for name, module, lr, reg_on, interval, main, reg in (
        ("G", G, o.g_lr, lo.pl_weight > 0, lo.pl_interval, g_main, g_reg),
        ("D", D, o.d_lr, lo.gamma > 0, lo.r1_interval, d_main, d_reg),
    ):
        ratio = lazy_ratio(interval) if reg_on else 1.0
        network = networks[name] = make_network(cfg, precision, name, module, frozen[name], lr, ratio)
        phases.append(
            Phase(
                name=f"{name}_main", network=network, lr=lr * ratio, interval=1, terms=main, samples_per_mb=lambda b: b
            )
        )
        if reg_on:
            shrink = lo.pl_batch_shrink if name == "G" else 1
            phases.append(
                Phase(
                    name=f"{name}_reg",
                    network=network,
                    lr=lr * ratio,
                    interval=interval,
                    terms=reg,
                    samples_per_mb=lambda b, s=shrink: b // s,
                    after_step=update_pl_mean if name == "G" else None,
                )
            )
    return networks, phases


def make_network(
    cfg: Config, precision: Precision, name: str, module: torch.nn.Module, frozen: set, lr: float, ratio: float
) -> Network:
    """`module` with an Adam over its parameters but the `frozen` ones, at `lr` and betas corrected by the lazy
    regularisation `ratio` (1: none), its loss scaler and gradient sync."""
    o = cfg.optim
    params = [p for key, p in module.named_parameters() if key not in frozen]
    opt = make_adam(params, lr * ratio, (o.beta1**ratio, o.beta2**ratio), o.eps)
    sync = GradientSync(params, cfg.runtime.allreduce_bucket_mb)
    clip = o.clip_grad_g if name == "G" else o.clip_grad_d
    return Network(name, module, params, opt, precision.make_scaler(), sync, clip, averages_buffers=name == "G")


def micro_batches(cfg: Config, plan: StepPlan, phase_index: int, images, labels, num_ws: int) -> list[MicroBatch]:
    """Split this rank's images of the step `plan` plans into micro-batches and attach each sample's random draws.

    Rank r holds positions j*W + r (j < B/W); micro-batch a takes j = a, a+A, a+2A, ... so micro-batch (a, r) holds
    exactly the positions congruent to a*W + r modulo A*W, however the A*W micro-batches are spread over ranks."""
    s, cur_nimg = cfg.schedule, plan.cur_nimg
    world, rank, acc = cfg.world_size, dist.rank(), cfg.accumulation
    gen = torch.Generator().manual_seed(derive_seed(s.seed, cur_nimg, phase_index))
    device = images.device
    z = torch.randn([s.batch, cfg.model.z_dim], generator=gen)
    z2 = torch.randn([s.batch, cfg.model.z_dim], generator=gen)
    u_mix, u_cut = torch.rand([s.batch], generator=gen), torch.rand([s.batch], generator=gen)
    cutoffs = L.mixing_cutoffs(u_mix, u_cut, num_ws, cfg.loss.style_mixing)
    out = []
    for a in range(acc):
        index = torch.arange(a, s.batch // world, acc) * world + rank  # position within the step
        out.append(
            MicroBatch(
                slot=a * world + rank,
                real=images[a::acc],
                c=labels[a::acc],
                # Copies the host does not wait for (a blocking copy to a CUDA device waits for its queue).
                z=z[index].to(device, non_blocking=True),
                z2=z2[index].to(device, non_blocking=True),
                cutoffs=cutoffs[index].to(device, non_blocking=True),
                positions=range(cur_nimg + a * world + rank, cur_nimg + s.batch, acc * world),  # those of `index`
                blur_sigma=plan.blur_sigma,
                gamma=plan.gamma,
            )
        )
    return out


def _set_trainable(network: Network, modules: list[torch.nn.Module]) -> None:
    """Gradients for the parameters this phase's network trains, and for nothing else (the other network, and this
    network's frozen layers, are constants of the phase)."""
    for module in modules:
        module.requires_grad_(False)
    for param in network.params:
        param.requires_grad_(True)


def run_phase(trainer: Trainer, phase: Phase, phase_index: int, plan: StepPlan, mbs: list[MicroBatch]) -> dict:
    """Accumulate the phase's loss over `mbs`, sum gradients over ranks, then step at the learning rate and betas
    `plan` gives — or, if any loss or gradient on any rank is non-finite, skip the step with the weights untouched.
    Returns the tick statistics of this phase."""
    network, cfg = phase.network, trainer.cfg
    _set_trainable(network, [trainer.G, trainer.D])
    for group in network.opt.param_groups:
        group["lr"] = phase.lr * plan.lr_factor
        if plan.beta2 is not None:  # annealed (R3GAN, which has no lazy regulariser whose ratio would correct it)
            group["betas"] = (cfg.optim.beta1, plan.beta2)
    trainer.precision.clear_gradients(network.params)
    total = sum(phase.samples_per_mb(len(mb.z)) for mb in mbs) * cfg.world_size
    gain = phase.interval / total  # mean over the global batch; lazy regularisers weigh `interval` times more
    stats, loss_sum = {}, torch.zeros([], device=mbs[0].real.device)
    for count, mb in enumerate(mbs, 1):
        torch.manual_seed(derive_seed(cfg.schedule.seed, plan.cur_nimg, phase_index, mb.slot))
        trainer.precision.start_micro_batch()
        with trainer.probe.section("fwd_bwd"):
            with trainer.precision.autocast():
                per_sample, terms = phase.terms(trainer, mb)
            loss = per_sample.float().sum() * gain
            if count == len(mbs):
                network.sync.arm()  # the gradients are final in this backward: sum them over ranks as they land
            network.scaler.scale(loss).backward()
        loss_sum += loss.detach()
        for key, value in terms.items():
            stats.setdefault(key, []).append(value.detach().float().flatten())
    return _finish_step(trainer, phase, {key: torch.cat(values) for key, values in stats.items()}, loss_sum)


def _finish_step(trainer: Trainer, phase: Phase, stats: dict, loss_sum: torch.Tensor) -> dict:
    network = phase.network
    params = network.params
    with trainer.probe.section("allreduce", "all-reduce"):
        network.sync.finish()
    with trainer.probe.section("optimizer"):
        network.scaler.unscale_(network.opt)
        grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        clip = network.clip
        if clip is not None:  # on the summed, unscaled gradient: every rank clips alike, the threshold is in true units
            torch.nn.utils.clip_grads_with_norm_(params, clip, grad_norm)
        skipped = nonfinite_flag(loss_sum, grad_norm)
        step_unless(network.opt, skipped)
        if phase.after_step is not None:
            phase.after_step(trainer, stats, skipped)
        trainer.nonfinite_in_a_row = (trainer.nonfinite_in_a_row + 1) * skipped.long()  # 0 after a step taken
        network.scaler.update()
        network.opt.zero_grad(set_to_none=True)
    if network.averages_buffers:
        with trainer.probe.section("allreduce", "all-reduce"):
            _average_buffers(network.module)
    out = dict(stats)
    out[per_phase(GRAD_NORM, phase.name)] = grad_norm.reshape(1)  # before clipping
    if clip is not None:
        out[per_phase(CLIPPED, phase.name)] = (grad_norm > clip).float().reshape(1)  # its tick mean: the share clipped
    out[per_phase(SKIPPED, phase.name)] = skipped.reshape(1)
    out[per_phase(LR, phase.name)] = torch.full([1], network.opt.param_groups[0]["lr"], device=grad_norm.device)
    return out


def tick_scalars(trainer: Trainer) -> dict[str, torch.Tensor | int]:
    """What a tick reads of the trainer besides the step statistics: the path-length mean and the count of
    non-finite steps in a row (`IN_A_ROW`, for `check_divergence`), device scalars to read in the statistics'
    transfer."""
    return {PL_MEAN: trainer.pl_mean, IN_A_ROW: trainer.nonfinite_in_a_row}


def check_divergence(values: dict[str, float]) -> None:
    """At a tick, with the values it read (`tick_scalars`; IN_A_ROW is removed from them): DivergedError when the
    last MAX_NONFINITE_IN_A_ROW optimizer steps or more all had non-finite losses or gradients. The weights are then
    still those of the last good step, since a skipped step leaves them alone."""
    in_a_row = round(values.pop(IN_A_ROW))
    if in_a_row < MAX_NONFINITE_IN_A_ROW:
        return
    skips = sorted((k.removeprefix(SKIPPED), v) for k, v in values.items() if k.startswith(SKIPPED) and v)
    skipped = ", ".join(f"{name} {count:g}" for name, count in skips)
    raise DivergedError(
        f"training diverged: {in_a_row} optimizer steps in a row had non-finite losses or gradients (skipped since "
        f"the last tick: {skipped or 'none'}); the weights are those of the last good step. Try a lower "
        "--glr/--dlr, a larger --gamma, or --precision fp32; resume from the last checkpoint with "
        "--allow-config-change"
    )


@torch.no_grad()
def _average_buffers(module: torch.nn.Module) -> None:
    """Running averages that the forward pass updates per micro-batch (the mapping network's w_avg, StyleGAN3's
    magnitude_ema) are averaged over ranks in one all-reduce, so replicas stay identical; constant buffers (filters,
    fixed noise) are left alone, bit for bit."""
    buffers = [b for name, b in module.named_buffers() if name.rsplit(".", 1)[-1] in RUNNING_AVERAGES]
    if dist.world_size() == 1 or not buffers:  # R3GAN keeps none
        return
    flat = dist.all_reduce_sum_(torch.cat([b.flatten() for b in buffers])) / dist.world_size()
    for buf, value in zip(buffers, flat.split([b.numel() for b in buffers]), strict=True):
        buf.copy_(value.view_as(buf))
