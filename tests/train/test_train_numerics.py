"""Training numerics on CPU: accumulation, bf16, non-finite steps, a learning signal, and the loss terms."""

import copy
import math
from pathlib import Path

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.data import open_dataset
from ganforge.data.source import DataSource
from ganforge.errors import UserError
from ganforge.train import checkpointing, resolve, run
from ganforge.train import loss as L
from ganforge.train.build import build
from ganforge.train.logs import TickStats
from ganforge.train.phases import (
    IN_A_ROW,
    MAX_NONFINITE_IN_A_ROW,
    DivergedError,
    check_divergence,
    micro_batches,
    run_phase,
    tick_scalars,
)
from ganforge.train.schedules import plan_step


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_numerics") / "squares")


def _train(options) -> dict:
    """Run to the end in a fresh OUTDIR and return the newest checkpoint's state."""
    assert run(resolve(options)) == 0
    (run_dir,) = Path(options.outdir).iterdir()
    return checkpoint.load_latest(run_dir / "checkpoints")


def _phase_gradients(data, tmp_path, phase_name: str, **extra) -> dict:
    """Fresh tiny networks (seed 0), one step of one phase on fixed images; the summed gradient of every parameter
    (Adam's first moment after one step with beta1 = 0 is exactly the gradient)."""
    cfg = resolve(tiny_options(data, tmp_path, kimg=0.008, tick=0.008, **extra))
    t, phases, _ = build(cfg, torch.device("cpu"))
    index = [p.name for p in phases].index(phase_name)
    phase = phases[index]
    images = torch.rand([8, 1, 8, 8], generator=torch.Generator().manual_seed(5)) * 2 - 1
    plan = plan_step(cfg, 0, phases)
    mbs = micro_batches(cfg, plan, index, images, torch.zeros([8, 0]), t.G.num_ws)
    assert len(mbs) == 8 // cfg.schedule.batch_gpu
    run_phase(t, phase, index, plan, mbs)
    names = [name for name, _ in phase.network.module.named_parameters()]
    return {names[i]: s["exp_avg"] for i, s in phase.network.opt.state_dict()["state"].items()}


@pytest.mark.parametrize("phase_name", ["G_main", "D_main", "D_reg", "G_reg"])
def test_train_accumulation_equals_one_big_batch(data, tmp_path, phase_name):
    """batch 8 as 2 micro-batches of 4 gives the same gradients as one micro-batch of 8, phase by phase.

    Noise strengths start at 0, so per-layer noise (drawn per micro-batch) reaches only their own gradients, which
    are the one thing excluded; everything else random is drawn per image position."""
    one = _phase_gradients(data, tmp_path / "one", phase_name)
    acc = _phase_gradients(data, tmp_path / "acc", phase_name, batch_gpu=4)
    compared = [name for name in one if "noise_strength" not in name]
    assert len(compared) > 10
    for name in compared:
        scale = one[name].abs().max().item()
        torch.testing.assert_close(acc[name], one[name], rtol=1e-4, atol=1e-5 * scale, msg=name)
    assert any(one[name].abs().max() > 0 for name in compared)


def test_train_bf16_runs_and_learns_finite_weights(data, tmp_path):
    state = _train(tiny_options(data, tmp_path, kimg=0.016, precision="bf16"))
    assert state["loop"]["cur_nimg"] == 16
    for net in ("G", "D"):
        assert all(torch.isfinite(v).all() for v in state[net].values() if v.is_floating_point())
    assert state["G"]["synthesis.b8.torgb.weight"].dtype == torch.float32  # fp32 master weights


def _trainer(data, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path, kimg=0.008, tick=0.008))
    t, phases, _ = build(cfg, torch.device("cpu"))
    images = torch.rand([8, 1, 8, 8]) * 2 - 1
    return cfg, t, phases, images


def test_train_nonfinite_step_is_skipped_with_weights_bitwise_unchanged(data, tmp_path, monkeypatch):
    """The skip is decided on the device (fused Adam's found_inf): the weights stay bitwise, Adam's moments stay
    those of a fresh optimiser (zeros, step 0), and the next finite step is bitwise the step of a run that never
    tried the failed one."""
    cfg, t, phases, images = _trainer(data, tmp_path)
    phase, plan = phases[0], plan_step(cfg, 0, phases)
    assert phase.name == "G_main"
    before = {k: v.clone() for k, v in t.G.state_dict().items() if "w_avg" not in k}
    monkeypatch.setattr(L, "g_nonsaturating", lambda logits: logits.flatten() * float("nan"))
    stats = run_phase(t, phase, 0, plan, micro_batches(cfg, plan, 0, images, torch.zeros([8, 0]), t.G.num_ws))
    assert stats["Skipped/G_main"].item() == 1
    after = t.G.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    moments = phase.network.opt.state_dict()["state"].values()
    assert all(m["step"] == 0 and not m["exp_avg"].any() and not m["exp_avg_sq"].any() for m in moments)
    assert t.nonfinite_in_a_row == 1
    # A finite step afterwards trains normally, as if the skipped one had never been tried, and resets the count.
    monkeypatch.undo()
    stats = run_phase(t, phase, 0, plan, micro_batches(cfg, plan, 0, images, torch.zeros([8, 0]), t.G.num_ws))
    assert stats["Skipped/G_main"].item() == 0 and t.nonfinite_in_a_row == 0
    _, fresh, fresh_phases, _ = _trainer(data, tmp_path)
    run_phase(fresh, fresh_phases[0], 0, plan, micro_batches(cfg, plan, 0, images, torch.zeros([8, 0]), t.G.num_ws))
    trained = fresh.G.state_dict()
    assert all(torch.equal(trained[k], t.G.state_dict()[k]) for k in before)
    assert not torch.equal(before["synthesis.b8.torgb.weight"], t.G.state_dict()["synthesis.b8.torgb.weight"])


def test_train_a_skipped_path_length_step_keeps_the_mean(data, tmp_path, monkeypatch):
    """The path-length mean moves only with a step taken: decided on the device, bitwise kept on a skipped one."""
    cfg, t, phases, images = _trainer(data, tmp_path)
    index, plan = [p.name for p in phases].index("G_reg"), plan_step(cfg, 0, phases)
    mbs = micro_batches(cfg, plan, index, images, torch.zeros([8, 0]), t.G.num_ws)
    before = t.pl_mean.clone()
    lengths = L.path_lengths
    with monkeypatch.context() as patch:
        patch.setattr(L, "path_lengths", lambda img, ws, noise: lengths(img, ws, noise) * float("nan"))
        stats = run_phase(t, phases[index], index, plan, mbs)
    assert stats["Skipped/G_reg"].item() == 1 and torch.equal(t.pl_mean, before)
    run_phase(t, phases[index], index, plan, mbs)
    assert not torch.equal(t.pl_mean, before) and torch.isfinite(t.pl_mean)


def test_train_fused_adam_never_takes_moments_of_another_shape(data, tmp_path):
    """Fused Adam would write such a moment past its end: restoring one is refused even where nothing checked the
    checkpoint before (the resume validator refuses it first)."""
    cfg, t, phases, images = _trainer(data, tmp_path)
    plan = plan_step(cfg, 0, phases)
    run_phase(t, phases[0], 0, plan, micro_batches(cfg, plan, 0, images, torch.zeros([8, 0]), t.G.num_ws))
    source = DataSource(open_dataset(data), 1)
    state = checkpointing.capture(t, copy.deepcopy(t.G), {"cur_nimg": 0, "cur_tick": 0}, source)
    state["opt_G"]["state"][0]["exp_avg"] = torch.zeros(2)
    with pytest.raises(UserError, match="Adam moments do not fit the networks"):
        checkpointing.restore(state, t, copy.deepcopy(t.G), source)


def _d_main_steps(cfg, t, phases, images, count: int) -> dict:
    """`count` steps of D main, then what the tick reads: the statistics and the trainer's scalars."""
    index, plan = [p.name for p in phases].index("D_main"), plan_step(cfg, 0, phases)
    mbs = micro_batches(cfg, plan, index, images, torch.zeros([8, 0]), t.G.num_ws)
    stats = TickStats()
    for _ in range(count):
        stats.add(run_phase(t, phases[index], index, plan, mbs))
    return stats.reduce(torch.device("cpu"), tick_scalars(t))


def test_train_twenty_nonfinite_steps_in_a_row_abort_at_the_tick_with_advice(data, tmp_path, monkeypatch):
    """The count of non-finite steps in a row is kept on the device and read by the tick, which aborts at
    MAX_NONFINITE_IN_A_ROW; one fewer does not."""
    cfg, t, phases, images = _trainer(data, tmp_path)
    monkeypatch.setattr(L, "d_logistic", lambda real, fake: real.flatten() + float("inf"))
    values = _d_main_steps(cfg, t, phases, images, MAX_NONFINITE_IN_A_ROW - 1)
    check_divergence(values)
    assert IN_A_ROW not in values and values["Skipped/D_main"] == MAX_NONFINITE_IN_A_ROW - 1
    values = _d_main_steps(cfg, t, phases, images, 1)
    with pytest.raises(DivergedError) as error:
        check_divergence(values)
    message = str(error.value)
    assert "20 optimizer steps in a row had non-finite" in message and "--precision fp32" in message
    assert "skipped since the last tick: D_main 1" in message


def test_train_a_finite_step_resets_the_count_in_a_row(data, tmp_path, monkeypatch):
    cfg, t, phases, images = _trainer(data, tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(L, "d_logistic", lambda real, fake: real.flatten() + float("inf"))
        _d_main_steps(cfg, t, phases, images, MAX_NONFINITE_IN_A_ROW - 1)
    values = _d_main_steps(cfg, t, phases, images, 1)
    assert values[IN_A_ROW] == 0 and values["Skipped/D_main"] == 0
    check_divergence(values)


def test_train_learning_moves_generated_brightness_toward_the_data(tmp_path):
    """A robust learning signal: the mean pixel of generated images (about 0 at the start) moves most of the way to
    the data's (dark images)."""
    dark = make_dataset(tmp_path / "dark", count=16, brightness=0.1)
    target = ((0.1 * 0.6 * 255 * 3 + 0.1 * 255) / 4) / 127.5 - 1  # 3/4 background, 1/4 square: about -0.86
    options = tiny_options(dark, tmp_path / "runs", kimg=0.4, batch=8, tick=0.2, glr=0.01, dlr=0.01)
    state = _train(options)
    initial = checkpoint.load(sorted((tmp_path / "runs").glob("*/checkpoints/ckpt-000000000"))[0])

    def mean_pixel(G_state):
        from ganforge.nets import Generator
        from ganforge.train.build import build_networks

        G, _ = build_networks(resolve(options), torch.device("cpu"))
        assert isinstance(G, Generator)
        G.load_state_dict(G_state)
        with torch.no_grad():
            z = torch.randn([64, G.z_dim], generator=torch.Generator().manual_seed(1))
            return G(z, torch.zeros([64, 0])).mean().item()

    before, after = mean_pixel(initial["G_ema"]), mean_pixel(state["G_ema"])
    assert math.isfinite(after)
    assert abs(after - target) < 0.5 * abs(before - target), (before, after, target)


def test_train_loss_terms_match_their_equations():
    logits = torch.tensor([[0.0], [2.0]])
    torch.testing.assert_close(L.g_nonsaturating(logits), torch.log1p(torch.exp(-logits)).flatten())
    torch.testing.assert_close(L.d_logistic(logits, -logits), 2 * torch.log1p(torch.exp(-logits)).flatten())
    x = torch.randn([3, 1, 4, 4], requires_grad=True)
    (penalty,) = L.zero_centred_penalties(((x * 2).sum([1, 2, 3]).unsqueeze(1),), (x,), gamma=10)  # grad = 2 everywhere
    torch.testing.assert_close(penalty, torch.full([3], 10 / 2 * 4 * 16))
    cut = L.mixing_cutoffs(torch.tensor([0.0, 0.95]), torch.tensor([0.999, 0.0]), num_ws=6, prob=0.9)
    assert cut.tolist() == [5, 6]
    ws1, ws2 = torch.zeros([2, 6, 1]), torch.ones([2, 6, 1])
    assert L.mix_styles(ws1, ws2, cut).squeeze(2).tolist() == [[0, 0, 0, 0, 0, 1], [0] * 6]
