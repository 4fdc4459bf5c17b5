"""--grad-checkpoint: G's synthesis blocks and D's blocks recompute their activations in backward. Every phase, the
double backward of R1 and path length included, must get bitwise the same gradients as without it (the recomputed
forward is the same arithmetic on the same inputs, with the per-layer noise replayed from the same RNG state), and a
run may switch it on resume.
"""

import json

import pytest
import torch
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge.cli import main
from ganforge.config import Config, config_hash
from ganforge.config.describe import describe_derived
from ganforge.train import resolve, run
from ganforge.train.build import build
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts
from ganforge.train.schedules import plan_step

CPU = torch.device("cpu")
STEP = 0.008  # one batch of 8 images


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("grad_checkpoint") / "squares")


def _config(tmp_path, grad_checkpoint: bool, res: int = 16, preset: str = "tiny") -> Config:
    facts = Facts(DatasetFacts(res, 1, 0, "squares"), 1, "cpu")
    options = tiny_options(tmp_path / "data", tmp_path / "out", preset=preset, grad_checkpoint=grad_checkpoint)
    return resolve(options, facts)


def _count_forwards(*modules: torch.nn.Module) -> list[int]:
    """One counter per module, raised by each call of its forward. (Recomputation in backward calls forward again
    but does not run forward hooks, so the method itself is wrapped.)"""
    counts = [0] * len(modules)

    def counted(i, forward):
        def call(*args, **kwargs):
            counts[i] += 1
            return forward(*args, **kwargs)

        return call

    for i, module in enumerate(modules):
        module.forward = counted(i, module.forward)
    return counts


def _one_step(cfg: Config, phase_name: str) -> tuple[dict, dict, list[int]]:
    """Fresh networks, one step of one phase on fixed images. -> (its stats, {parameter: Adam's first moment, which
    with beta1 = 0 is the step's gradient}, forward calls of G's top synthesis block and D's top block)."""
    t, phases, _ = build(cfg, CPU)
    with torch.no_grad():  # the noise strengths start at 0; make the noise reach every gradient
        for name, param in t.G.named_parameters():
            if name.endswith("noise_strength"):
                param.fill_(0.5)
    index = [p.name for p in phases].index(phase_name)
    phase = phases[index]
    counts = _count_forwards(t.G.synthesis.b16, t.D.b16)
    images = torch.rand([8, 1, 16, 16], generator=torch.Generator().manual_seed(5)) * 2 - 1
    plan = plan_step(cfg, 0, phases)
    stats = run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, torch.zeros([8, 0]), t.G.num_ws))
    names = [name for name, _ in phase.network.module.named_parameters()]
    moments = {names[i]: s["exp_avg"] for i, s in phase.network.opt.state_dict()["state"].items()}
    return stats, moments, counts


# Forward calls of (G's top block, D's top block) in one step, without and with recomputation. G main runs G and D
# once each; path length runs G; D main runs G without grad, then D once on the fakes and reals stacked; R1 runs D on
# the reals. Recomputation adds one forward per block call that records a graph, and a second one in the regularisers,
# whose double backward reads the block's activations in both of its backward passes.
FORWARDS = {
    "G_main": ((1, 1), (2, 2)),
    "G_reg": ((1, 0), (3, 0)),
    "D_main": ((1, 1), (1, 2)),
    "D_reg": ((0, 1), (0, 3)),
}


@pytest.mark.parametrize("phase_name", list(FORWARDS))
def test_every_phase_gets_bitwise_the_same_gradients(tmp_path, phase_name):
    plain, plain_moments, plain_counts = _one_step(_config(tmp_path, False), phase_name)
    ckpt, ckpt_moments, ckpt_counts = _one_step(_config(tmp_path, True), phase_name)
    assert (tuple(plain_counts), tuple(ckpt_counts)) == FORWARDS[phase_name]
    assert plain_moments.keys() == ckpt_moments.keys() and len(plain_moments) > 0
    for name, moment in plain_moments.items():
        assert torch.equal(ckpt_moments[name], moment), name
    for key, value in plain.items():
        assert torch.equal(ckpt[key], value), key


def test_the_switch_reaches_both_networks_and_the_start_report(tmp_path):
    on, off = _config(tmp_path, True), _config(tmp_path, False)
    assert on.runtime.grad_checkpoint and not off.runtime.grad_checkpoint
    assert on.to_json() != off.to_json() and '"grad_checkpoint": true' in on.to_json()  # --dry-run prints it
    assert any(line.startswith("gradient checkpointing") for line in describe_derived(on))
    assert not any(line.startswith("gradient checkpointing") for line in describe_derived(off))
    for cfg in (on, off):
        t, _, _ = build(cfg, CPU)
        assert t.G.synthesis.grad_checkpoint == t.D.grad_checkpoint == cfg.runtime.grad_checkpoint
    assert config_hash(on) == config_hash(off)  # a speed switch: not part of the training maths


def test_the_cli_shows_it_in_the_dry_run_and_refuses_it_for_stylegan3(data, tmp_path):
    """StyleGAN3's layers update magnitude_ema in forward: a recomputation would update it twice."""
    result = CliRunner().invoke(main, tiny_args(data, tmp_path, grad_checkpoint=True, dry_run=True))
    assert result.exit_code == 0 and json.loads(result.stdout)["runtime"]["grad_checkpoint"] is True
    assert "derived: gradient checkpointing: G's synthesis blocks and D's blocks recompute" in result.stderr
    result = CliRunner().invoke(main, tiny_args(data, tmp_path, grad_checkpoint=True) + ["--cfg", "tiny3"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "error: --grad-checkpoint: the stylegan3-t generator updates running statistics" in result.output


def _checkpoint_bytes(outdir) -> dict[str, bytes]:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    latest = sorted((run_dir / "checkpoints").glob("ckpt-*"))[-1]
    return {f.name: f.read_bytes() for f in latest.iterdir() if f.name != "manifest.json"} | {"name": latest.name}


def test_a_run_switches_it_on_resume_and_ends_bitwise_equal(data, tmp_path):
    """Two steps with recomputation, then a rerun without it continues the same run (no --allow-config-change) to
    the third step: the final checkpoint is byte for byte that of three steps without recomputation (weights, Adam
    moments and the RNG states after backward)."""

    def options(outdir, steps, **extra):
        return tiny_options(data, outdir, kimg=steps * STEP, tick=STEP, batch_gpu=8, **extra)

    assert run(resolve(options(tmp_path / "switched", 2, grad_checkpoint=True))) == 0
    assert run(resolve(options(tmp_path / "switched", 3))) == 0
    assert run(resolve(options(tmp_path / "plain", 3))) == 0
    (run_dir,) = [p for p in (tmp_path / "switched").iterdir() if p.is_dir()]
    assert "resuming at 0.016 kimg" in (run_dir / "log.txt").read_text()
    switched, plain = _checkpoint_bytes(tmp_path / "switched"), _checkpoint_bytes(tmp_path / "plain")
    assert switched["name"] == "ckpt-000000024" and switched == plain
