"""--compile on the CPU: torch.compile's inductor backend generates C++ kernels (built with the system's C compiler)
for the main phases' forwards, in its default mode and in max-autotune (which also times its C++ matrix-multiply
templates against ATen's and keeps the fastest). reduce-overhead is refused on a CPU (its CUDA graphs exist on CUDA
only; tests/train/test_train_cuda.py checks it on a GPU).

Five steps of the tiny networks, each its own tick: step 0 runs every phase (path length and R1 are lazy, due at steps
0 and 4, and 0), so compiled main phases alternate with eager regularisation phases on the same weights. The run
compiles in the default mode for three steps, then the same command with `--compile max-autotune` continues it (the
mode is a speed setting that a continued run may change) for two more. Every tick's losses and the final weights and
Adam moments must be those of an eager run, within float32 reordering: inductor fuses and reorders the sums of a
layer, which moves the last bits of every value, and Adam's step, a gradient divided by its running magnitude, is
the learning rate (2.5e-3) whatever the gradient's size. Measured after the 5 steps: no weight more than 1.8e-5 from
eager's (a weight's last bit is 1e-7 near 1, 3e-5 near the mapping layers' 380) and no Adam moment more than
1.5e-6 of its layer's largest from eager's. The bounds, 1e-4 for a weight and 1e-3 of the largest for a moment, leave
room for other CPUs' kernels and still catch one step gone another way (2.5e-3). Inductor draws random numbers (the
per-layer noise) with its own generator unless `fallback_random` asks for eager's, which the test does so that both
runs add the same noise.

Inductor's first compile of even the tiny networks takes over a minute per mode on 2 cores (each of its ~70 kernels
is a C++ build), so the test is marked `benchmark` and runs only when asked for:
`pytest -m benchmark tests/train/test_train_compile_cpu.py`.
"""

import json
from pathlib import Path

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.train import resolve, run

pytestmark = pytest.mark.benchmark
STEP = 0.008  # one batch of 8 images
LOSSES = ("Loss/G/main", "Loss/D/main", "Loss/G/pl", "Loss/D/r1", "Scores/real", "Scores/fake")


def _options(data, outdir, steps: int, **extra):
    return tiny_options(data, outdir, kimg=steps * STEP, tick=STEP, batch_gpu=8, **extra)


def _run_dir(outdir: Path) -> Path:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    return run_dir


def _ticks(outdir: Path) -> list[dict]:
    records = [json.loads(line) for line in (_run_dir(outdir) / "stats.jsonl").read_text().splitlines()]
    return [{key: r[key] for key in LOSSES if key in r} for r in records if "Loss/G/main" in r]


def _final_state(outdir: Path) -> dict:
    return checkpoint.load_latest(_run_dir(outdir) / "checkpoints")


def test_default_and_max_autotune_steps_give_the_eager_run_and_a_compiled_run_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(torch._inductor.config, "fallback_random", True)
    data = make_dataset(tmp_path / "squares")
    assert run(resolve(_options(data, tmp_path / "eager", 5))) == 0
    assert run(resolve(_options(data, tmp_path / "compiled", 3, compile="default"))) == 0
    assert run(resolve(_options(data, tmp_path / "compiled", 5, compile="max-autotune"))) == 0
    assert "resuming at 0.024 kimg" in (_run_dir(tmp_path / "compiled") / "log.txt").read_text()
    eager, compiled = _ticks(tmp_path / "eager"), _ticks(tmp_path / "compiled")
    assert len(eager) == 5 and [tick.keys() for tick in compiled] == [tick.keys() for tick in eager]
    assert "Loss/G/pl" in eager[4] and "Loss/D/r1" in eager[0]
    for step, (expected, actual) in enumerate(zip(eager, compiled, strict=True)):
        for key, value in expected.items():
            assert actual[key] == pytest.approx(value, rel=1e-4, abs=1e-5), (step, key)
    expected, actual = _final_state(tmp_path / "eager"), _final_state(tmp_path / "compiled")
    assert actual["loop"]["cur_nimg"] == expected["loop"]["cur_nimg"] == 40
    for name in ("G", "D", "G_ema"):
        for key, value in expected[name].items():
            assert (actual[name][key] - value).abs().max() <= 1e-4, (name, key)
    for name in ("opt_G", "opt_D"):
        for index, state in expected[name]["state"].items():
            for key, value in state.items():
                gap = (actual[name]["state"][index][key] - value).abs().max()
                assert gap <= 1e-3 * value.abs().max(), (name, index, key)
