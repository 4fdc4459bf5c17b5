"""--compile on the CPU: torch.compile's default inductor backend generates C++ kernels (built with the system's C
compiler) for the main phases' forwards. The compiled step must give the eager losses, and a compiled run must
resume. Inductor's first compile of even the tiny networks takes over a minute on 2 cores, so the test is marked
`benchmark` and runs only when asked for: `pytest -m benchmark tests/train/test_train_compile_cpu.py`.
"""

import json
from pathlib import Path

import pytest
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.train import resolve, run

pytestmark = pytest.mark.benchmark
STEP = 0.008  # one batch of 8 images


def _options(data, outdir, steps: int, **extra):
    return tiny_options(data, outdir, kimg=steps * STEP, tick=STEP, batch_gpu=8, **extra)


def _run_dir(outdir: Path) -> Path:
    (run_dir,) = [p for p in outdir.iterdir() if p.is_dir()]
    return run_dir


def _first_tick(outdir: Path) -> dict:
    records = [json.loads(line) for line in (_run_dir(outdir) / "stats.jsonl").read_text().splitlines()]
    return next(r for r in records if "Loss/G/main" in r)


def test_compiled_steps_give_the_eager_losses_and_a_compiled_run_resumes(tmp_path):
    data = make_dataset(tmp_path / "squares")
    for mode in ("eager", "compiled"):
        assert run(resolve(_options(data, tmp_path / mode, 1, compile=mode == "compiled"))) == 0
    eager, compiled = _first_tick(tmp_path / "eager"), _first_tick(tmp_path / "compiled")
    for key in ("Loss/G/main", "Loss/D/main", "Scores/real", "Scores/fake"):
        assert compiled[key] == pytest.approx(eager[key], rel=1e-4, abs=1e-5), key
    assert run(resolve(_options(data, tmp_path / "compiled", 2, compile=True))) == 0
    assert "resuming at 0.008 kimg" in (_run_dir(tmp_path / "compiled") / "log.txt").read_text()
    assert checkpoint.load_latest(_run_dir(tmp_path / "compiled") / "checkpoints")["loop"]["cur_nimg"] == 16
