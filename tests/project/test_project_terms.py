"""What the projector's and pivotal tuning's steps actually receive: the learning rate Adam steps with and the noise
added to w at each step (not only `search.schedule` as a function), each target's distance to its own image, and
PTI's locality term between the tuned and the original network, on networks and targets whose values differ."""

import copy

import pytest
import torch
import torch.nn.functional as F
from project_helpers import tiny_generator

from distinct_helpers import adam_gradients, assert_distinct, perturb
from ganforge.metrics.perceptual import PixelFeatures
from ganforge.nets import Generator
from ganforge.nets.noise import noise_buffer_names
from ganforge.project import options as settings
from ganforge.project import search, tune

STEPS = 40
# The official schedule at 40 steps, by hand: the rate rises over the first 5 % (2 steps) and falls by half a cosine
# over the last 25 % (from step 30); the w noise falls as (1 - t / 0.75)^2 to 0 at step 30.
LR_AT = {0: 0.0, 1: 0.05, 2: 0.1, 30: 0.1, 35: 0.05}  # LEARNING_RATE 0.1 x the rate factor
NOISE_AT = {0: 1.0, 6: 0.64, 15: 0.25, 29: (1 - 29 / 40 / 0.75) ** 2, 30: 0.0, 39: 0.0}


class _RecordingAdam(torch.optim.Adam):
    """Adam that records the learning rate and betas of each step it takes."""

    rates: list[float] = []
    betas: set[tuple] = set()

    def step(self, closure=None):
        _RecordingAdam.rates.append(self.param_groups[0]["lr"])
        _RecordingAdam.betas.add(self.param_groups[0]["betas"])
        return super().step(closure)


def _targets(G, count: int = 2) -> torch.Tensor:
    z = torch.randn([count, G.z_dim], generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        images = G.synthesis(G.mapping(z, None), noise_mode="const", force_fp32=True)
    return ((images + 1) * 127.5).clamp(0, 255).round().to(torch.uint8)


def test_each_step_takes_the_scheduled_rate_and_w_noise(monkeypatch):
    G = tiny_generator()
    c, seeds, targets = torch.zeros([1, 0]), (3, 4), _targets(G)
    received = []
    G.synthesis.register_forward_pre_hook(lambda module, args: received.append(args[0].detach().clone()))
    monkeypatch.setattr(_RecordingAdam, "rates", [])
    monkeypatch.setattr(_RecordingAdam, "betas", set())
    monkeypatch.setattr(torch.optim, "Adam", _RecordingAdam)
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    result = search.project(G, targets, PixelFeatures(), space="w", steps=STEPS, c=c, generators=generators,
                            keep_history=True)  # fmt: skip
    assert len(received) == len(_RecordingAdam.rates) == STEPS
    assert {step: _RecordingAdam.rates[step] for step in LR_AT} == pytest.approx(LR_AT, abs=1e-12)
    assert _RecordingAdam.betas == {(0.9, 0.999)}  # the official projector's Adam

    # the noise added to w at each step: what G received minus the w being optimised before the step
    w_avg, w_std = search.w_statistics(G, c)
    draws = []
    for seed in seeds:  # each target's stream: its noise maps first, then one w draw per step
        gen = torch.Generator().manual_seed(seed)
        for name in noise_buffer_names(G):
            torch.randn(G.synthesis.get_buffer(name).shape, generator=gen)
        draws.append(torch.stack([torch.randn([1, G.w_dim], generator=gen) for _ in range(STEPS)]))
    draws = torch.stack(draws, 1)  # [steps, targets, 1, w_dim]
    for step, factor in NOISE_AT.items():
        before = result.history[step - 1] if step else w_avg.expand(2, 1, -1)
        added = received[step][:, :1] - before
        expected = draws[step] * w_std * settings.W_NOISE * factor
        torch.testing.assert_close(added, expected, rtol=1e-4, atol=1e-6, msg=f"step {step}")


@pytest.mark.parametrize("classes", [0, 2])
def test_the_start_and_the_noise_scale_are_the_mean_and_spread_of_mapped_latents(classes):
    """w's mean and its root mean squared distance to the mean over all entries, of latents drawn from the official
    seed (with the class asked, for a conditional G), in chunks (2500: two whole chunks and a part) against one batch
    in float64."""
    torch.manual_seed(0)
    G = Generator(resolution=8, img_channels=3, z_dim=16, w_dim=16, c_dim=classes, channel_base=256, channel_max=32,
                  mapping_layers=2).eval()  # fmt: skip
    c = torch.eye(classes)[-1:] if classes else torch.zeros([1, 0])
    mean, spread = search.w_statistics(G, c, samples=2500)
    z = torch.randn([2500, G.z_dim], generator=torch.Generator().manual_seed(search.W_AVG_SEED))
    with torch.no_grad():
        w = G.mapping(z, c.expand(2500, -1))[:, 0].double()
    torch.testing.assert_close(mean, w.mean(0).float(), rtol=1e-5, atol=1e-6)
    assert spread == pytest.approx((w - w.mean(0)).square().sum(1).mean().sqrt().item(), rel=1e-6)


def test_rendering_targets_together_is_rendering_each_with_its_own_noise_maps():
    G = tiny_generator()
    ws = G.mapping(torch.randn([2, G.z_dim], generator=torch.Generator().manual_seed(2)), None)
    generator = torch.Generator().manual_seed(8)
    noise = {name: torch.randn([2, *G.synthesis.get_buffer(name).shape], generator=generator)
             for name in noise_buffer_names(G)}  # fmt: skip
    together = search.render(G, ws, noise)
    alone = [search.render(G, ws[i : i + 1], {name: value[i : i + 1] for name, value in noise.items()}) for i in (0, 1)]
    assert_distinct(together, "the two renderings")
    torch.testing.assert_close(together, torch.cat(alone), rtol=1e-5, atol=1e-6)


def test_each_targets_distance_is_to_its_own_image():
    """distances[step] are the pixel distances of each target's own rendering to its own target: two targets and
    their images differ, so a distance taken to the other target would not pass."""
    G = tiny_generator()
    targets = _targets(G)
    features, c = PixelFeatures(), torch.zeros([1, 0])
    received = []
    G.synthesis.register_forward_hook(lambda module, args, out: received.append(out.detach().clone()))
    generators = [torch.Generator().manual_seed(s) for s in (3, 4)]
    result = search.project(G, targets, features, space="w", steps=3, c=c, generators=generators)
    assert_distinct(targets.float(), "the targets")
    for step in range(3):
        assert_distinct(received[step], f"the renderings at step {step}")
        expected = (received[step] - (targets.float() / 127.5 - 1)).square().flatten(1).mean(1)  # in [-1, 1] units
        torch.testing.assert_close(result.distances[step], expected, rtol=1e-5, atol=1e-7)


def test_the_locality_term_compares_the_tuned_network_with_the_original_at_alpha_from_the_pivot():
    """PTI eqs. 4-5 by hand. At the start the tuned network is the original and the term is 0 whichever networks it
    compares: the tuned copy is moved off the original first, and their images are checked to differ."""
    original = tiny_generator()
    tuned = perturb(tiny_generator(), scale=0.2, keep=("noise_strength",))
    c, features = torch.zeros([1, 0]), PixelFeatures()
    pivot = original.mapping(torch.randn([1, original.z_dim], generator=torch.Generator().manual_seed(1)), c)
    term = tune._locality(tuned, original, pivot, features, c, torch.Generator().manual_seed(7))

    z = torch.randn([1, original.z_dim], generator=torch.Generator().manual_seed(7))
    w_z = original.mapping(z, c)
    w_r = pivot + settings.LOCALITY_ALPHA * (w_z - pivot) / (w_z - pivot).norm()
    ours, theirs = (g.synthesis(w_r, noise_mode="const", force_fp32=True) for g in (tuned, original))
    assert_distinct(torch.cat([ours, theirs]), "the tuned and original networks' images")
    distance = (ours - theirs).square().mean()  # the pixel features' distance, in [-1, 1] units
    expected = distance + settings.LOCALITY_L2 * F.mse_loss(ours, theirs)
    torch.testing.assert_close(term.detach(), expected.detach().reshape(1), rtol=1e-5, atol=0)


def test_a_tuning_step_adds_the_weighted_locality_term_to_the_pivots_distances(monkeypatch):
    """The gradient of the first tuning step is that of distance + lambda_L2 MSE + lambda_R L_R (PTI eq. 6). At the
    start the tuned network is the original, where the real L_R and its gradient are 0 whatever its sign: a stand-in
    that depends on the tuned weights shows how the step weighs it."""
    G = tiny_generator()
    target, features = _targets(G, 1), PixelFeatures()
    pivot = G.mapping(torch.randn([1, G.z_dim], generator=torch.Generator().manual_seed(1)), None)
    noise = {name: G.synthesis.get_buffer(name)[None] for name in noise_buffer_names(G)}

    def stand_in(tuned, original, pivot, features, c, generator):
        return sum(w.square().sum() for w in tuned.synthesis.parameters()).reshape(1)

    monkeypatch.setattr(tune, "_locality", stand_in)
    received = adam_gradients(monkeypatch)
    tune.tune(G, pivot, noise, target, features, steps=1, c=torch.zeros([1, 0]), generator=torch.Generator())
    reference = copy.deepcopy(G)
    weights = [w.requires_grad_(True) for w in reference.synthesis.parameters()]
    image = reference.synthesis(pivot, noise_mode="const", force_fp32=True)
    wanted = target.float() / 127.5 - 1
    loss = (image - wanted).square().mean() * (1 + settings.TUNE_L2)  # the pixel distance is the MSE itself
    loss = loss + settings.LOCALITY_WEIGHT * sum(w.square().sum() for w in weights)
    expected = torch.autograd.grad(loss, weights)
    for got, value in zip(received[0], expected, strict=True):
        torch.testing.assert_close(got, value, rtol=1e-4, atol=1e-8)


class _Counter:
    """A progress stage that counts its updates."""

    def __init__(self):
        self.updates = 0

    def update(self, n: int = 1) -> None:
        self.updates += n


def test_each_projection_and_tuning_step_advances_the_progress_once():
    G = tiny_generator()
    target, features, c = _targets(G, 1), PixelFeatures(), torch.zeros([1, 0])
    searched, tuned = _Counter(), _Counter()
    result = search.project(G, target, features, space="w", steps=3, c=c, generators=[torch.Generator()],
                            stage=searched)  # fmt: skip
    noise = {name: value for name, value in result.noise.items()}
    tune.tune(G, result.ws[:1], noise, target, features, steps=2, c=c, generator=torch.Generator(), stage=tuned)
    assert (searched.updates, tuned.updates) == (3, 2)
