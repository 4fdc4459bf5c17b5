"""Each GAN phase against a hand-written reference of its loss (StyleGAN2 App. B and Eq. 4; Mescheder et al. 2018
Eq. 9), built from the networks and the phase's random draws only, never from ganforge.train.loss or the phase code.

One step of one phase on tiny networks: with Adam's beta1 = 0, the first moment after that step is exactly the
gradient the phase produced. D is moved off its initialisation (zero biases) and every comparison first checks that
the samples' values differ (each image's logit and input gradient, each latent's path length), so a term taken on the
wrong images, the wrong half of D's pass or the wrong network cannot pass. Noise strengths stay at 0, so the per-layer
noise (random in the phases, left out of the references) reaches only the noise strengths' own gradients, which are
not compared.
"""

import copy
import dataclasses
import hashlib

import pytest
import torch
import torch.nn.functional as F
from train_helpers import make_dataset, tiny_options

from distinct_helpers import assert_distinct, perturb
from ganforge.train import loss as L
from ganforge.train import resolve
from ganforge.train.build import build
from ganforge.train.phases import derive_seed, micro_batches, run_phase
from ganforge.train.schedules import plan_step

GAMMA = 0.5
PL_WEIGHT, PL_DECAY = 2.0, 0.01  # StyleGAN2 App. B: path-length weight 2, running mean decay 0.01
BATCH, CLASSES = 8, 2
LABELS = torch.eye(CLASSES)[torch.arange(BATCH) % CLASSES]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_reference") / "squares")


def _setup(data, tmp_path, **extra):
    """Narrow networks (4-8 channels, w_dim 8) so that finite differences over every w coordinate stay cheap, and
    conditional on 2 classes, so that the labels' way through every phase is checked too."""
    cfg = resolve(tiny_options(data, tmp_path, kimg=0.008, tick=0.008, gamma=GAMMA, **extra))
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, z_dim=8, w_dim=8, channel_base=32,
                                                             channel_max=8),
                              data=dataclasses.replace(cfg.data, cond=True, label_dim=CLASSES))  # fmt: skip
    assert cfg.loss.pl_weight == PL_WEIGHT and cfg.loss.pl_decay == PL_DECAY
    t, phases, _ = build(cfg, torch.device("cpu"))
    perturb(t.D, scale=0.2)  # off its zero biases (G's images differ by their latents; its noise strengths stay 0)
    images = torch.rand([BATCH, 1, 8, 8], generator=torch.Generator().manual_seed(5)) * 2 - 1
    return cfg, t, phases, images


def _step(cfg, t, phases, images, name: str):
    """Run phase `name` once; -> (its stats, {parameter name: gradient}, the micro-batch, G and D before the step)."""
    index = [p.name for p in phases].index(name)
    phase = phases[index]
    plan = plan_step(cfg, 0, phases)
    (mb,) = micro_batches(cfg, plan, index, images, LABELS, t.G.num_ws)
    assert torch.equal(mb.c, LABELS)
    before = copy.deepcopy(t.G), copy.deepcopy(t.D)
    stats = run_phase(t, phase, index, plan, [mb])
    names = [n for n, _ in phase.network.module.named_parameters()]
    grads = {names[i]: s["exp_avg"] for i, s in phase.network.opt.state_dict()["state"].items()}
    return stats, grads, mb, before


def _mixed_ws(G, mb, n: int) -> torch.Tensor:
    """Style mixing by hand (StyleGAN Sec. 3.1): layers from the cutoff on take their w from z2."""
    ws1, ws2 = G.mapping(mb.z[:n], mb.c[:n]), G.mapping(mb.z2[:n], mb.c[:n])
    second = torch.arange(ws1.shape[1])[None, :, None] >= mb.cutoffs[:n, None, None]
    return torch.where(second, ws2, ws1)


def _gradients(module, loss) -> dict:
    named = list(module.named_parameters())
    grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
    return {n: torch.zeros_like(p) if g is None else g for (n, p), g in zip(named, grads, strict=True)}


def _assert_same_gradients(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    compared = {name: grad for name, grad in expected.items() if not name.endswith("noise_strength")}
    assert sum(grad.abs().max() > 0 for grad in compared.values()) > len(compared) // 2
    for name, grad in compared.items():
        scale = max(grad.abs().max().item(), 1e-12)
        torch.testing.assert_close(actual[name], grad, rtol=1e-4, atol=1e-5 * scale, msg=name)


def test_g_main_is_the_nonsaturating_loss_of_d_on_fakes(data, tmp_path):
    cfg, t, phases, images = _setup(data, tmp_path)
    _, grads, mb, (G, D) = _step(cfg, t, phases, images, "G_main")
    fakes = G.synthesis(_mixed_ws(G, mb, BATCH), noise_mode="none")
    logits = D(fakes, mb.c)
    assert_distinct(fakes, "the fakes")
    assert_distinct(logits, "D's logits of the fakes")
    loss = F.softplus(-logits).sum() / BATCH  # -log sigmoid(D(G(z))), mean over the batch
    _assert_same_gradients(grads, _gradients(G, loss))


def test_d_main_is_the_logistic_loss_on_reals_and_fakes(data, tmp_path):
    cfg, t, phases, images = _setup(data, tmp_path)
    stats, grads, mb, (G, D) = _step(cfg, t, phases, images, "D_main")
    with torch.no_grad():
        fakes = G.synthesis(_mixed_ws(G, mb, BATCH), noise_mode="none")
    real_logits, fake_logits = D(images, mb.c), D(fakes, mb.c)
    assert_distinct(torch.cat([real_logits, fake_logits]), "D's logits of the reals and the fakes")
    loss = (F.softplus(-real_logits).sum() + F.softplus(fake_logits).sum()) / BATCH
    _assert_same_gradients(grads, _gradients(D, loss))
    torch.testing.assert_close(stats["Scores/real"], real_logits.detach().flatten())


def test_d_reg_is_r1_on_reals_weighted_by_its_interval(data, tmp_path):
    cfg, t, phases, images = _setup(data, tmp_path)
    stats, grads, mb, (_, D) = _step(cfg, t, phases, images, "D_reg")
    real = images.clone().requires_grad_(True)
    (slope,) = torch.autograd.grad(D(real, mb.c).sum(), real, create_graph=True)
    assert_distinct(slope, "D's input gradients of the reals")
    penalty = GAMMA / 2 * slope.square().sum(dim=[1, 2, 3])  # R1, Mescheder et al. 2018 Eq. 9
    assert_distinct(penalty, "the reals' R1")
    torch.testing.assert_close(stats["Loss/D/r1"], penalty.detach())
    interval = 16  # lazy regularisation: R1 every 16 steps, weighted 16x (StyleGAN2 Sec. 3.1)
    _assert_same_gradients(grads, _gradients(D, penalty.sum() * interval / BATCH))


def _finite_difference_lengths(G, ws: torch.Tensor, probe: torch.Tensor, h: float = 1e-2) -> torch.Tensor:
    """||J_w^T y|| by central differences of y . g(w) over every coordinate of every w, mean over the num_ws copies
    of w inside the square root (StyleGAN2 Eq. 4, as the official code averages them)."""
    n, num_ws, w_dim = ws.shape
    steps = torch.eye(num_ws * w_dim).view(-1, num_ws, w_dim) * h  # [K, num_ws, w_dim]
    lengths = []
    with torch.no_grad():
        for i in range(n):
            plus = G.synthesis(ws[i] + steps, noise_mode="none")
            minus = G.synthesis(ws[i] - steps, noise_mode="none")
            slope = ((plus - minus) * probe[i]).sum(dim=[1, 2, 3]) / (2 * h)  # [K] = J^T y, one entry per coordinate
            lengths.append(slope.square().sum().div(num_ws).sqrt())
    return torch.stack(lengths)


def test_g_reg_path_length_matches_finite_differences_and_pl_mean_is_its_ema(data, tmp_path, monkeypatch):
    cfg, t, phases, images = _setup(data, tmp_path)
    previous_mean = 0.05
    t.pl_mean = torch.tensor(previous_mean)
    probes = []
    path_lengths = L.path_lengths

    def recording(images, ws, noise):
        probes.append(noise.detach().clone())
        return path_lengths(images, ws, noise)

    monkeypatch.setattr(L, "path_lengths", recording)
    stats, grads, mb, (G, _) = _step(cfg, t, phases, images, "G_reg")
    (probe,) = probes
    n = BATCH // 2  # path length runs on half the micro-batch (pl_batch_shrink)
    assert probe.shape == (n, 1, 8, 8)
    assert 0.1 < probe.std().item() < 0.15  # y ~ N(0, I) / sqrt(H * W) = N(0, 1/64)
    assert all(not torch.equal(probe[0], other) for other in probe[1:])  # one probe per image
    ws = _mixed_ws(G, mb, n).detach()
    expected = _finite_difference_lengths(G, ws, probe)
    assert_distinct(ws, "the mixed ws")
    assert_distinct(expected, "the path lengths")
    torch.testing.assert_close(stats["PL/length"], expected, rtol=2e-3, atol=0)
    torch.testing.assert_close(stats["Loss/G/pl"], PL_WEIGHT * (stats["PL/length"] - previous_mean).square())
    # pl_mean <- pl_mean + decay * (mean length - pl_mean), after the step
    mean_length = stats["PL/length"].mean().item()
    assert t.pl_mean.item() == pytest.approx(previous_mean + PL_DECAY * (mean_length - previous_mean), rel=1e-6)

    ws = _mixed_ws(G, mb, n)
    image = G.synthesis(ws, noise_mode="none")
    (slope,) = torch.autograd.grad((image * probe).sum(), ws, create_graph=True)
    lengths = slope.square().sum(2).mean(1).sqrt()
    interval = 4  # lazy regularisation: path length every 4 steps, weighted 4x
    loss = PL_WEIGHT * (lengths - previous_mean).square().sum() * interval / n
    _assert_same_gradients(grads, _gradients(G, loss))


def test_bf16_autocast_really_runs_the_phases_in_bfloat16(data, tmp_path):
    """bf16 rounds the forward, so its gradients differ from fp32's, but only by bf16's precision."""
    results = {}
    for precision in ("fp32", "bf16"):
        cfg, t, phases, images = _setup(data, tmp_path / precision, precision=precision)
        results[precision] = _step(cfg, t, phases, images, "D_main")[1]
    fp32, bf16 = (torch.cat([g.flatten() for g in results[p].values()]) for p in ("fp32", "bf16"))
    relative = ((bf16 - fp32).norm() / fp32.norm()).item()
    assert 1e-4 < relative < 0.1, relative


@pytest.mark.parametrize("name", ["G_main", "D_main", "D_reg"])
def test_augmentation_reaches_every_image_d_sees_reals_and_fakes(data, tmp_path, name):
    """With ADA at p = 1 every image D sees (reals and fakes, main and R1 phases) is augmented; at p = 0 none is."""
    seen = {}
    for p in (0.0, 1.0):
        cfg, t, phases, images = _setup(data, tmp_path / str(p), aug="ada")
        t.augment.p.fill_(p)
        inputs = seen[p] = []
        t.D.register_forward_pre_hook(lambda module, args, inputs=inputs: inputs.append(args[0].detach().clone()))
        _step(cfg, t, phases, images, name)
    assert len(seen[0.0]) == len(seen[1.0]) == 1  # D main judges fakes and reals in one pass
    plain, augmented = seen[0.0][0], seen[1.0][0]
    assert len(plain) == len(images) * (2 if name == "D_main" else 1)
    assert (plain != augmented).flatten(1).any(dim=1).all(), "an image reached D unaugmented at p = 1"
    if name != "G_main":
        assert torch.equal(plain[-len(images) :], images)  # the reals themselves at p = 0, after the fakes


def test_style_mixing_cutoffs_are_uniform_over_the_layers_with_probability_p():
    """StyleGAN Sec. 3.1: with probability p a crossover point uniform over layers 1..num_ws-1, else none."""
    n, num_ws = 1000, 6
    evenly_spread = (torch.arange(n) + 0.5) / n
    cut = L.mixing_cutoffs(torch.zeros(n), evenly_spread, num_ws, prob=0.9)
    assert torch.bincount(cut, minlength=num_ws + 1).tolist() == [0, 200, 200, 200, 200, 200, 0]
    assert L.mixing_cutoffs(torch.zeros(1), torch.ones(1), num_ws, prob=0.9).item() == num_ws - 1
    mixed = L.mixing_cutoffs(evenly_spread, torch.full([n], 0.5), num_ws, prob=0.9) < num_ws
    assert mixed.sum().item() == 900  # P(u < p) = p
    assert L.mixing_cutoffs(torch.zeros(3), evenly_spread[:3], num_ws, prob=0.0).tolist() == [num_ws] * 3  # u may be 0


def test_seeds_are_the_first_63_bits_of_a_digest_of_their_parts():
    """Every draw of a step is seeded from (seed, position, phase, slot): the first 8 bytes of the SHA-256 of the
    parts joined by "/", little-endian, top bit cleared (so any generator takes it)."""

    def by_hand(*parts):
        digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
        return int.from_bytes(digest[:8], "little") % 2**63

    assert derive_seed(3, 104, 2, 1) == by_hand(3, 104, 2, 1)
    seeds = [derive_seed(0, n) for n in range(64)]
    assert seeds == [by_hand(0, n) for n in range(64)] and len(set(seeds)) == 64
