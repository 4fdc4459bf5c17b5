"""Training on a CUDA GPU: fp16 with GradScaler and unscaled regularisers, the per-resolution fp16 recipe, TF32,
--deterministic, --compile and NCCL. Every test needs a GPU (the `cuda` marker: skipped with the reason without one).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from train_helpers import make_dataset, tiny_args, tiny_options

from dtype_helpers import record_dtype
from ganforge import checkpoint
from ganforge.checkpoint.serialize import flatten
from ganforge.train import loop, resolve, run
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.schedules import plan_step

pytestmark = pytest.mark.cuda
CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_cuda") / "squares")


def _options(data, outdir, **extra) -> TrainOptions:
    return tiny_options(data, outdir, **{"device": "cuda", "kimg": 0.008, "tick": 0.008, **extra})


def _one_phase(cfg, phase_name: str, scale: float | None = None) -> tuple[dict, dict]:
    """Fresh networks, one step of one phase on fixed images. -> (its stats on the CPU, {parameter: Adam's first
    moment, which with beta1 = 0 is the unscaled gradient of that step})."""
    t, phases, _ = build(cfg, CUDA)
    index = [p.name for p in phases].index(phase_name)
    phase = phases[index]
    if scale is not None:
        phase.network.scaler = torch.amp.GradScaler("cuda", init_scale=scale)
    images = (torch.rand([8, 1, 8, 8], generator=torch.Generator().manual_seed(5)) * 2 - 1).to(CUDA)
    plan = plan_step(cfg, 0, phases)
    mbs = micro_batches(cfg, plan, index, images, torch.zeros([8, 0], device=CUDA), t.G.num_ws)
    stats = {key: value.cpu() for key, value in run_phase(t, phase, index, plan, mbs).items()}
    names = [name for name, _ in phase.network.module.named_parameters()]
    moments = {names[i]: s["exp_avg"].cpu() for i, s in phase.network.opt.state_dict()["state"].items()}
    return stats, moments


# tf32's cosine bound is bf16's: on an H200 one G step's const gradient had cosine 0.9957 and one D step's fromRGB
# weight 0.9979 against fp32 (the gradients of the layers furthest from the loss gather the most rounding).
@pytest.mark.parametrize("precision, rtol, cosine", [("tf32", 1e-2, 0.99), ("bf16", 5e-2, 0.99), ("fp16", 5e-2, 0.99)])
@pytest.mark.parametrize("phase_name, stat", [("G_main", "Loss/G/main"), ("D_main", "Loss/D/main")])
def test_every_precision_takes_a_finite_step_close_to_fp32(data, tmp_path, precision, rtol, cosine, phase_name, stat):
    """Fresh networks, one main step: the losses agree with fp32 within the precision's rounding, and each layer's
    gradient (Adam's first moment, beta1 = 0) points the same way. Under fp16 the GradScaler starts at 2^10: at its
    default 2^16 G's first step overflowed on an H200 and was skipped, as a GradScaler does while its scale adapts."""
    scale = 2.0**10 if precision == "fp16" else None
    low, low_moments = _one_phase(resolve(_options(data, tmp_path, precision=precision)), phase_name, scale)
    fp32, fp32_moments = _one_phase(resolve(_options(data, tmp_path / "fp32")), phase_name)
    assert low[f"Skipped/{phase_name}"].item() == 0 and torch.isfinite(low[stat]).all()
    torch.testing.assert_close(low[stat], fp32[stat], rtol=rtol, atol=1e-3)
    for name, moment in fp32_moments.items():
        if moment.norm() > 0:
            similarity = torch.nn.functional.cosine_similarity(low_moments[name].flatten(), moment.flatten(), dim=0)
            assert similarity > cosine, (name, similarity.item())


@pytest.mark.parametrize("phase_name, stat", [("D_reg", "Loss/D/r1"), ("G_reg", "PL/length")])
def test_fp16_regularisers_take_unscaled_gradients(data, tmp_path, phase_name, stat):
    """R1 and path length differentiate D's and G's outputs themselves, not the scaled loss: their values do not
    change with the GradScaler's scale, and the unscaled parameter gradients agree up to fp16 rounding."""
    cfg = resolve(_options(data, tmp_path, precision="fp16"))
    assert cfg.precision.mode == "fp16"
    low, high = (_one_phase(cfg, phase_name, scale) for scale in (2.0**2, 2.0**10))
    assert low[0][f"Skipped/{phase_name}"].item() == high[0][f"Skipped/{phase_name}"].item() == 0
    torch.testing.assert_close(low[0][stat], high[0][stat], rtol=1e-3, atol=1e-6)
    fp32 = _one_phase(resolve(_options(data, tmp_path / "fp32")), phase_name)
    torch.testing.assert_close(high[0][stat], fp32[0][stat], rtol=5e-2, atol=1e-4)  # not multiplied by a scale
    a, b = (torch.cat([g.flatten() for g in moments.values()]) for moments in (low[1], high[1]))
    assert ((a - b).norm() / b.norm()).item() < 5e-2


def test_fp16_res_runs_the_top_resolution_in_float16_with_fp32_master_weights(data, tmp_path):
    cfg = resolve(_options(data, tmp_path, precision="fp16", fp16_res=1))
    assert cfg.precision.fp16_res == 1 and cfg.precision.conv_clamp == 256
    t, phases, _ = build(cfg, CUDA)
    dtypes = {}
    for name, module in (("G b4", t.G.synthesis.b4.conv1), ("G b8", t.G.synthesis.b8.conv1), ("D b8", t.D.b8.conv0)):
        module.register_forward_hook(record_dtype(dtypes, name))
    images = (torch.rand([8, 1, 8, 8], generator=torch.Generator().manual_seed(5)) * 2 - 1).to(CUDA)
    plan, labels = plan_step(cfg, 0, phases), torch.zeros([8, 0], device=CUDA)
    for index, phase in enumerate(phases):  # the first steps may overflow and be skipped while the scale adapts
        run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))
    assert dtypes == {"G b4": torch.float32, "G b8": torch.float16, "D b8": torch.float16}
    for module in (t.G, t.D):
        assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in module.parameters())
    assert run(resolve(_options(data, tmp_path / "run", precision="fp16", fp16_res=1, kimg=0.032))) == 0


def _tf32_flags() -> tuple[str, str]:
    return torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision


@pytest.mark.parametrize("precision, expected", [("tf32", "tf32"), ("fp32", "ieee")])
def test_tf32_only_while_training_with_precision_tf32(data, tmp_path, monkeypatch, precision, expected):
    seen, run_phase_eagerly = set(), loop.run_phase

    def spy(*args):
        seen.add(_tf32_flags())
        return run_phase_eagerly(*args)

    monkeypatch.setattr(loop, "run_phase", spy)
    before = _tf32_flags()
    assert run(resolve(_options(data, tmp_path, precision=precision))) == 0
    assert seen == {(expected, expected)} and _tf32_flags() == before


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.get_device_capability() < (8, 0),
                    reason="TF32 needs an Ampere or newer GPU")  # fmt: skip
def test_tf32_really_rounds_matmul_inputs_and_fp32_does_not():
    from ganforge.numerics import fp32_math

    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(512, 512, generator=gen) for _ in range(2))
    exact = (a.double() @ b.double()).float()
    results = {}
    for tf32 in (False, True):
        with fp32_math(tf32=tf32):
            results[tf32] = (a.to(CUDA) @ b.to(CUDA)).cpu()
    error = {tf32: ((out - exact).norm() / exact.norm()).item() for tf32, out in results.items()}
    assert error[False] < 1e-5 < 1e-4 < error[True], error  # TF32 keeps 10 mantissa bits: about 1e-3 relative


def _cli_state(outdir: Path) -> dict:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    return checkpoint.load_latest(run_dir / "checkpoints")


def test_deterministic_runs_are_bitwise_identical_with_augmentation(data, tmp_path):
    """Two fresh processes (CUBLAS_WORKSPACE_CONFIG must precede CUDA); ADA reaches p > 0 after step 7 (on the CPU: p
    0.64 from r_t = 1), so steps 8-11 backpropagate through augmented images."""
    extra = ["--device", "cuda", "--deterministic", "--aug", "ada", "--ada-kimg", "0.05", "--target", "0.1"]
    env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8", OMP_NUM_THREADS="1")
    states = []
    for name in ("a", "b"):
        command = [sys.executable, "-m", "ganforge", *tiny_args(data, tmp_path / name, kimg=0.096), *extra]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        states.append(_cli_state(tmp_path / name))
    a, b = states
    assert a["augment"]["pipe"]["p"].item() > 0
    for key in ("G", "D", "G_ema", "opt_G", "opt_D", "augment", "loop"):
        (skeleton_a, tensors_a), (skeleton_b, tensors_b) = flatten(a[key]), flatten(b[key])
        assert skeleton_a == skeleton_b, key
        for name, value in tensors_a.items():
            assert torch.equal(value, tensors_b[name]), f"{key} {name}"


def _first_tick(outdir: Path) -> dict:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    records = [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]
    return next(r for r in records if "Loss/G/main" in r)


def test_compile_gives_the_eager_losses(data, tmp_path):
    """The first step's losses come from identical weights, so compiled and eager forwards must agree closely."""
    # fp32: the default `auto` is bf16 on Ampere+, and the bound below is float32's
    for mode in ("eager", "compiled"):
        compile_mode = "default" if mode == "compiled" else None
        assert run(resolve(_options(data, tmp_path / mode, compile=compile_mode, precision="fp32"))) == 0
    eager, compiled = _first_tick(tmp_path / "eager"), _first_tick(tmp_path / "compiled")
    for key in ("Loss/G/main", "Loss/D/main", "Scores/real", "Scores/fake"):
        assert compiled[key] == pytest.approx(eager[key], rel=1e-3, abs=1e-5), key


def _ticks(outdir: Path) -> list[dict]:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    return [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]


def test_reduce_overhead_cuda_graph_steps_give_the_eager_run(data, tmp_path, monkeypatch):
    """Five steps, each a tick, of two micro-batches each (the replays of the second overwrite the outputs of the
    first), with path length at steps 0 and 4 and R1 at step 0 (eager, between the graphs' replays): every tick's
    losses and the final weights are the eager run's within float32 reordering (fp32: `auto` would be bf16). Inductor
    draws the layers' noise with eager's generator here (`fallback_random`), so that both runs add the same noise."""
    monkeypatch.setattr(torch._inductor.config, "fallback_random", True)
    states = {}
    for mode in (None, "reduce-overhead"):
        outdir = tmp_path / str(mode)
        options = _options(data, outdir, kimg=0.08, batch=16, batch_gpu=8, tick=0.016, compile=mode, precision="fp32")
        assert run(resolve(options)) == 0
        states[mode] = (_ticks(outdir), checkpoint.load_latest(next(outdir.iterdir()) / "checkpoints"))
    (eager, expected), (graphs, actual) = states[None], states["reduce-overhead"]
    losses = [[{k: v for k, v in tick.items() if k.startswith(("Loss/", "Scores/"))} for tick in ticks
               if "Loss/G/main" in tick] for ticks in (eager, graphs)]  # fmt: skip
    assert len(losses[0]) == 5 and "Loss/G/pl" in losses[0][4] and "Loss/D/r1" in losses[0][0]
    for step, (reference, values) in enumerate(zip(*losses, strict=True)):
        assert values.keys() == reference.keys(), step
        for key, value in reference.items():
            assert values[key] == pytest.approx(value, rel=1e-3, abs=1e-5), (step, key)
    for name in ("G", "D", "G_ema"):
        for key, value in expected[name].items():
            torch.testing.assert_close(actual[name][key], value, rtol=1e-3, atol=1e-4, msg=f"{name} {key}")


_NCCL_WORKER = """
import torch, torch.distributed as tdist
from ganforge import dist

device = dist.init("cuda")
assert tdist.get_backend() == "nccl", tdist.get_backend()
x = torch.arange(4.0, device=device)
tdist.all_reduce(x)
torch.cuda.synchronize()
assert torch.equal(x.cpu(), torch.arange(4.0)) and dist.check_replicas({"x": x}) == []
assert dist.broadcast_object({"a": 1}) == {"a": 1}
dist.barrier()
dist.shutdown()
print("nccl ok")
"""


def test_nccl_single_process_group(run_ranks):
    (out,) = run_ranks(_NCCL_WORKER, world_size=1)
    assert "nccl ok" in out


def test_torchrun_one_process_trains_over_nccl(data, tmp_path):
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]
    args = [*tiny_args(data, tmp_path, kimg=0.016), "--device", "cuda"]
    proc = subprocess.run([*launcher, "-m", "ganforge", *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _cli_state(tmp_path)["loop"]["cur_nimg"] == 16


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_over_nccl_equal_one_gpu(data, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # fp32: the default `auto` is bf16 on Ampere+, and the tolerance below is float32's
    one = [*tiny_args(data, tmp_path / "one", kimg=0.032, batch_gpu=4, precision="fp32"), "--device", "cuda"]
    subprocess.run([sys.executable, "-m", "ganforge", *one], env=env, check=True, capture_output=True, timeout=600)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    two = [*tiny_args(data, tmp_path / "two", kimg=0.032, precision="fp32"), "--device", "cuda"]
    proc = subprocess.run([*launcher, "-m", "ganforge", *two], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _cli_state(tmp_path / "one"), _cli_state(tmp_path / "two")
    for net in ("G", "D", "G_ema"):
        for name, value in a[net].items():
            if not name.endswith("w_avg"):  # averaged over ranks per step vs. updated per micro-batch
                torch.testing.assert_close(b[net][name], value, rtol=1e-3, atol=1e-5, msg=f"{net}.{name}")
