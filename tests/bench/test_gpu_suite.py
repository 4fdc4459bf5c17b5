"""benchmarks/gpu_suite.py's CPU dry run, as CI runs it: the plan in its order, the steps a CPU can run really run
(a bench step, the memory model's batch and the bench at it, the side-by-side's plan, the loader), and the JSON and
markdown results hold their figures; and vs_official.py's plan on CUDA."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_suite.py"


def _suite(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), *args], capture_output=True,
                          text=True, timeout=900)  # fmt: skip


MAIN_STEPS = ["cuda-tests", "bench bf16 eager", "bench fp16 eager", "bench bf16 triton", "bench fp16 triton",
              "bench bf16 channels-last", "bench bf16 compile", "kernels stylegan3-t reference",
              "kernels stylegan3-t triton", "memory paper1024", "bench paper1024 predicted batch",
              "vs official paper256"]  # fmt: skip
EXTRA_STEPS = ["doctor", "loader", "bench fp32 eager", "bench tf32 eager", "bench bf16 reduce-overhead",
               "bench bf16 max-autotune"]  # fmt: skip


def test_dry_run_plans_every_step_in_order_runs_the_cpu_ones_and_writes_json_and_markdown(tmp_path):
    """The order that a spent budget cuts from the end; the memory model's batch handed to the 1024² bench; the
    side-by-side's plan written; the loader's share read."""
    only = ("memory paper1024", "bench paper1024 predicted batch", "vs official paper256", "loader")
    done = _suite(tmp_path, "--only", *only)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = {s["name"]: s for s in json.loads((tmp_path / "suite.json").read_text())["steps"]}
    assert list(steps) == MAIN_STEPS + EXTRA_STEPS
    eager, fp16 = steps["bench bf16 eager"], steps["bench fp16 eager"]
    assert eager["status"] == "skipped" and eager["command"][-2:] == ["--kernels", "reference"]
    assert fp16["status"] == "skipped" and "GPU" in fp16["why"] and "--fp16-res" in fp16["command"]
    assert steps["bench bf16 triton"]["command"][-2:] == ["--kernels", "triton"]
    assert steps["cuda-tests"]["status"] == "skipped" and steps["doctor"]["why"] == "not in --only"
    batch = steps["memory paper1024"]["figures"]["batch_gpu"]
    assert isinstance(batch, int) and batch >= 4
    big = steps["bench paper1024 predicted batch"]
    assert big["status"] == "ran" and big["rc"] == 0 and big["figures"]["img_per_s"] > 0
    assert big["figures"]["memory_gb"] > 0 and big["command"][big["command"].index("--batch-gpu") + 1] == str(batch)
    versus = steps["vs official paper256"]
    assert versus["status"] == "ran" and versus["figures"]["dry_run"] and len(versus["figures"]["runs"]) == 4
    loader = steps["loader"]["figures"]
    assert 0 <= loader["data_wait_share"] <= 1 and loader["img_per_s"] > 0
    table = (tmp_path / "suite.md").read_text()
    assert f"| paper1024 predicted batch | {big['figures']['img_per_s']:.1f} |" in table
    assert "| bench bf16 eager | skipped |" in table
    assert f"Memory model: paper1024 fits {batch} images per device" in table
    assert "| cuda-tests | skipped |" in table and "Data loader:" in table


def test_a_spent_budget_skips_what_is_left(tmp_path):
    done = _suite(tmp_path, "--only", "bench bf16 eager", "--budget-s", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    steps = json.loads((tmp_path / "suite.json").read_text())["steps"]
    assert all(s["status"] == "skipped" for s in steps)
    eager = next(s for s in steps if s["name"] == "bench bf16 eager")
    assert eager["why"] == "the suite's time budget was spent"


def test_the_side_by_side_plans_paper256_on_cuda(tmp_path):
    """vs_official.py --device cuda: paper256's setting, the sides taking turns, one allocator (glibc's setting is
    for host memory); its JSON written by the dry run."""
    out = tmp_path / "plan.json"
    script = SCRIPT.parent / "vs_official.py"
    done = subprocess.run([sys.executable, str(script), "--device", "cuda", "--dry-run", "--json", str(out)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    planned = json.loads(out.read_text())
    assert planned["setting"] == "256x256, batch 64, fp16 at the top 4 resolutions, cuda"
    assert [(r["round"], r["side"]) for r in planned["runs"]][:4] == [(0, "official"), (0, "ganforge"),
                                                                      (1, "ganforge"), (1, "official")]  # fmt: skip
    assert {r["allocator"] for r in planned["runs"]} == {"default"} and len(planned["runs"]) == 8


def test_only_refuses_a_step_that_does_not_exist(tmp_path):
    done = _suite(tmp_path, "--only", "bench fp64 eager")
    assert done.returncode == 2 and "--only: no step named bench fp64 eager" in done.stderr
