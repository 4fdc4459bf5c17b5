"""benchmarks/gpu_suite.py's CPU dry run, as CI runs it: the plan, a bench step and the loader step really run, and
the JSON and markdown results hold their figures."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_suite.py"


def _suite(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), *args], capture_output=True,
                          text=True, timeout=900)  # fmt: skip


def test_dry_run_plans_every_step_runs_the_cpu_ones_and_writes_json_and_markdown(tmp_path):
    done = _suite(tmp_path, "--only", "bench fp32 eager", "loader")
    assert done.returncode == 0, done.stdout + done.stderr
    steps = {s["name"]: s for s in json.loads((tmp_path / "suite.json").read_text())["steps"]}
    precisions = ("fp32", "tf32", "bf16", "fp16")
    expected = {"doctor", "cuda-tests", "loader"} | {f"bench {p} {v}" for p in precisions
                                                     for v in ("eager", "channels-last", "compile")}  # fmt: skip
    kernels = {f"kernels {net} {choice}" for net in ("paper256", "stylegan3-t", "stylegan3-r")
               for choice in ("reference", "compile", "triton")}  # fmt: skip
    kernels |= {"kernels paper256 reduce-overhead", "kernels paper256 max-autotune"}  # torch.compile's other modes
    assert set(steps) == expected | kernels
    assert list(steps)[-1] == "kernels paper256 max-autotune"  # the slowest to compile: the first a budget cuts
    assert steps["kernels paper256 reduce-overhead"]["command"][-2:] == ["--compile", "reduce-overhead"]
    assert "--kernels" in steps["kernels stylegan3-r triton"]["command"]
    assert steps["kernels paper256 triton"]["status"] == "skipped" and "GPU" in steps["kernels paper256 triton"]["why"]
    assert steps["cuda-tests"]["status"] == "skipped" and "GPU" in steps["cuda-tests"]["why"]
    assert steps["bench fp32 compile"]["status"] == "skipped" and steps["doctor"]["why"] == "not in --only"
    bench = steps["bench fp32 eager"]
    assert bench["status"] == "ran" and bench["rc"] == 0 and "--cfg" in bench["command"]
    assert bench["figures"]["img_per_s"] > 0 and bench["figures"]["memory_gb"] > 0
    loader = steps["loader"]["figures"]
    assert 0 <= loader["data_wait_share"] <= 1 and loader["img_per_s"] > 0
    table = (tmp_path / "suite.md").read_text()
    assert f"| fp32 eager | {bench['figures']['img_per_s']:.1f} |" in table
    assert "| cuda-tests | skipped |" in table and "Data loader:" in table


def test_only_refuses_a_step_that_does_not_exist(tmp_path):
    done = _suite(tmp_path, "--only", "bench fp64 eager")
    assert done.returncode == 2 and "--only: no step named bench fp64 eager" in done.stderr
