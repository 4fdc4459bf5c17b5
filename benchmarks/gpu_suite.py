"""Everything worth knowing about one GPU, in one run: the environment, the CUDA tests, the training step in every
precision (with and without torch.compile and channels-last) and the data loader feeding it.

    python benchmarks/gpu_suite.py                       # on a GPU machine; writes to $OUT, else ./gpu-suite
    python benchmarks/gpu_suite.py --out results/h200 --budget-s 460
    python benchmarks/gpu_suite.py --dry-run --out /tmp/suite   # CPU: print the plan, run what a CPU can run
    python benchmarks/gpu_suite.py --only "bench bf16 compile" loader     # just these steps (names as in suite.md)

Steps, in order, each a subprocess with its own time limit:
1. `ganforge doctor --json --quick`: versions, driver, NVML readings, the reference checks.
2. `pytest -m cuda` over the test suite (the GPU-only tests; skipped everywhere else).
3. `ganforge bench --json` at 256² (paper256) for fp32, tf32, bf16 and fp16, eager: img/s, s/kimg, peak memory and
   the share of the dense tensor peak (bench's datasheet table).
4. A short `ganforge train` from a synthetic fast-format dataset (read ahead by a thread of the trainer): the share
   of the step spent waiting for data.
5. The fused-op implementations (`--kernels reference`, `--compile`, `--kernels triton`) on StyleGAN2 at 256²
   (paper256) and StyleGAN3-T and -R at 256², bf16, and on paper256 torch.compile's other modes, `--compile
   reduce-overhead` (CUDA graphs) and `--compile max-autotune` (tuned kernels and CUDA graphs): img/s and peak memory
   side by side (the compiled ones last).
6. The bench again, channels-last, then compiled; max-autotune last of all (its tuning compiles for minutes, so a
   spent budget skips it first).
The whole suite stays inside --budget-s: a step that would start after it is recorded as skipped, so a slow compile
cannot cost the table. The results go to suite.json (every step's command, exit status, seconds, parsed figures and,
where it failed, its output's tail), suite.md (the tables) and cuda-tests.txt (pytest's whole report) in the output
folder.

With --dry-run the same steps run at toy size on the CPU (16², the tiny preset, one timed call), the CUDA tests are
listed but not run (they would all skip), and compiled entries are planned but not run (inductor on CPU takes
minutes): the script's own plumbing is exercised where there is no GPU.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
VARIANTS = ({"label": "eager"}, {"label": "channels-last", "flag": "--channels-last"},
            {"label": "compile", "flag": "--compile"})  # fmt: skip
# Who runs the fused ops, as the bench is told: the reference ops eager, compiled by inductor, or the Triton kernels.
KERNELS = {"reference": ["--kernels", "reference"], "compile": ["--compile"], "triton": ["--kernels", "triton"]}
# torch.compile's other modes, on StyleGAN2 (paper256) only: both replay CUDA graphs, and max-autotune times candidate
# kernels for every matrix multiply and convolution while it compiles (minutes).
COMPILE_MODES = {"reduce-overhead": ["--compile", "reduce-overhead"], "max-autotune": ["--compile", "max-autotune"]}
KERNEL_CONFIGS = {"paper256": ["--cfg", "paper256"], "stylegan3-t": ["--cfg", "stylegan3-t", "--resolution", "256"],
                  "stylegan3-r": ["--cfg", "stylegan3-r", "--resolution", "256"]}  # fmt: skip
TIME_LIMIT_S = {"doctor": 120, "cuda-tests": 300, "bench": 150, "bench-autotune": 300, "loader": 120}
# Exit statuses that mean the step did its job: doctor exits 1 for warnings and 2 for failed checks, which are
# findings to read in its report, not a broken suite.
GOOD_RC = {"doctor": (0, 1, 2), "cuda-tests": (0,), "bench": (0,), "bench-autotune": (0,), "loader": (0,)}


@dataclass
class Step:
    """One subprocess of the suite and what it produced."""

    name: str
    command: list[str]
    kind: str  # a key of TIME_LIMIT_S
    run: bool = True  # False: planned only (not runnable here)
    why_not: str = ""
    result: dict = field(default_factory=dict)
    keep_output: Path | None = None  # write the whole stdout and stderr here


def ganforge(*args: str) -> list[str]:
    return [sys.executable, "-m", "ganforge", *args]


def bench_steps(dry_run: bool) -> list[Step]:
    """paper256 per precision and variant; in a dry run the tiny preset at 16² on the CPU, eager and channels-last.
    On the GPU 10 rounds of every phase (2 untimed, 2 repeats of 4): bench's default 33 took 122 s of an H200 for
    fp32, and the suite must fit a lease of minutes."""
    size = ["--cfg", "tiny", "--resolution", "16", "--steps", "1", "--warmup", "0", "--device", "cpu"] if dry_run else [
        "--cfg", "paper256", "--steps", "4", "--warmup", "2", "--repeat", "2", "--device", "cuda"]  # fmt: skip
    steps = []
    for variant in VARIANTS:
        for precision in PRECISIONS:
            flag = [variant["flag"]] if "flag" in variant else []
            step = Step(f"bench {precision} {variant['label']}", ganforge("bench", *size, "--precision", precision,
                                                                           "--json", *flag), "bench")  # fmt: skip
            if dry_run and (variant["label"] == "compile" or precision in ("tf32", "fp16")):
                step.run, step.why_not = False, "needs a GPU (or minutes of inductor on CPU)"
            steps.append(step)
    return steps


def kernel_steps(dry_run: bool) -> list[Step]:
    """Each KERNELS choice on each KERNEL_CONFIGS network, then each COMPILE_MODES mode on paper256, bf16; in a dry
    run the tiny presets at 16² on the CPU, where only the reference runs (Triton needs a GPU there, inductor minutes,
    CUDA graphs CUDA)."""
    configs = {"paper256": ["--cfg", "tiny"], "stylegan3-t": ["--cfg", "tiny3"], "stylegan3-r": ["--cfg", "tiny3"]}
    size = ["--resolution", "16", "--steps", "1", "--warmup", "0", "--device", "cpu"] if dry_run else [
        "--steps", "4", "--warmup", "2", "--repeat", "2", "--device", "cuda"]  # fmt: skip
    steps = []
    choices = [(name, choice, flags) for name in KERNEL_CONFIGS for choice, flags in KERNELS.items()]
    choices += [("paper256", mode, flags) for mode, flags in COMPILE_MODES.items()]
    for name, choice, flags in choices:
        network = configs[name] if dry_run else KERNEL_CONFIGS[name]
        command = ganforge("bench", *network, *size, "--precision", "bf16", "--json", *flags)
        step = Step(f"kernels {name} {choice}", command, "bench-autotune" if choice == "max-autotune" else "bench")
        if dry_run and choice != "reference":
            step.run, step.why_not = False, "needs a GPU (Triton only interprets on CPU; inductor takes minutes)"
        steps.append(step)
    return steps


def loader_step(dry_run: bool, data: Path, out: Path) -> Step:
    """A short training run from the fast format (`--workers` applies to zips only); its stats.jsonl holds the
    data-wait share."""
    kimg = "0.016" if dry_run else "0.512"
    preset = ["--cfg", "tiny", "--device", "cpu"] if dry_run else ["--cfg", "paper256", "--device", "cuda"]
    command = ganforge("train", "--data", str(data), "--outdir", str(out / "loader-run"), *preset, "--kimg", kimg,
                       "--tick", kimg, "--snap", "1", "--workers", "2", "--aug", "noaug", "--batch", "8" if dry_run
                       else "64")  # fmt: skip
    return Step("loader", command, "loader")


def plan(dry_run: bool, data: Path, out: Path, results: Path) -> list[Step]:
    """The steps in order; `out` is the scratch folder, `results` the one that is kept. Pytest's logging capture is
    off: a captured DEBUG log of torch.compile buried the failures' reasons under megabytes."""
    pytest = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "--tb=short", "-p", "no:cacheprovider", "-p",
              "no:logging", str(REPO / "tests")]  # fmt: skip
    cuda_tests = Step("cuda-tests", pytest, "cuda-tests", keep_output=results / "cuda-tests.txt")
    if dry_run:
        cuda_tests.run, cuda_tests.why_not = False, "needs a GPU (every test would skip)"
    doctor = Step("doctor", ganforge("doctor", "--json", "--quick", "--outdir", str(out)), "doctor")
    benches = bench_steps(dry_run)
    eager = [step for step in benches if step.name.endswith(" eager")]
    later = [step for step in benches if step not in eager]
    kernels = kernel_steps(dry_run)
    uncompiled = [step for step in kernels if step.name.endswith((" reference", " triton"))]
    autotuned = [step for step in kernels if step.kind == "bench-autotune"]
    compiled = [step for step in kernels if step not in uncompiled + autotuned]
    # the loader before the channels-last and compiled entries: if the budget runs out, it runs out on the compiles
    return [doctor, cuda_tests, *eager, *uncompiled, loader_step(dry_run, data, out), *compiled, *later, *autotuned]


def execute(step: Step, deadline: float, limited: bool) -> None:
    """Run one step within the suite's deadline and, if `limited`, its own limit; record rc, seconds and the parsed
    figures. The per-step limits are sized for the GPU; a dry run on a busy CPU is bounded by the deadline alone."""
    limit = min(TIME_LIMIT_S[step.kind] if limited else float("inf"), deadline - time.monotonic())
    if not step.run or limit <= 0:
        step.result = {"status": "skipped", "why": step.why_not or "the suite's time budget was spent"}
        return
    start = time.monotonic()
    try:
        done = subprocess.run(step.command, capture_output=True, text=True, timeout=limit, cwd=REPO)
    except subprocess.TimeoutExpired:
        step.result = {"status": "timeout", "seconds": round(time.monotonic() - start, 1)}
        return
    step.result = {"status": "ran", "rc": done.returncode, "seconds": round(time.monotonic() - start, 1)}
    if step.keep_output is not None:
        step.keep_output.write_text(done.stdout + done.stderr)
    if done.returncode not in GOOD_RC[step.kind]:  # the one chance to read why, on a machine lent for minutes
        step.result["output_tail"] = (done.stdout + done.stderr)[-3000:]
    try:
        step.result["figures"] = PARSERS[step.kind](done.stdout, step)
    except (ValueError, KeyError, IndexError, OSError) as error:
        step.result["status"] = "failed"
        step.result["why"] = f"{type(error).__name__}: {error}; stderr tail: {done.stderr[-400:]}"


def parse_doctor(stdout: str, _step: Step) -> dict:
    report = json.loads(stdout)
    return {"summary": report["summary"], "report": report}


def parse_pytest(stdout: str, _step: Step) -> dict:
    return {"summary": stdout.strip().splitlines()[-1]}


def parse_bench(stdout: str, _step: Step) -> dict:
    r = json.loads(stdout)
    return {"img_per_s": r["img_per_s"], "s_per_kimg": r["s_per_kimg"], "memory_gb": r["memory"]["gb"],
            "memory_source": r["memory"]["source"], "tflops": r["tflops"], "peak_fraction": r["peak"]["fraction"],
            "iteration_ms": r["iteration_ms"], "device": r["device"]["name"]}  # fmt: skip


def parse_loader(_stdout: str, step: Step) -> dict:
    outdir = Path(step.command[step.command.index("--outdir") + 1])
    (stats,) = outdir.glob("*/stats.jsonl")
    last = json.loads(stats.read_text().splitlines()[-1])
    return {"data_wait_share": last["Timing/data_wait_share"], "img_per_s": last["Timing/img_per_s"]}


PARSERS = {"doctor": parse_doctor, "cuda-tests": parse_pytest, "bench": parse_bench, "bench-autotune": parse_bench,
           "loader": parse_loader}  # fmt: skip


def make_dataset(folder: Path, dry_run: bool) -> Path:
    """A synthetic fast-format archive (256², or 16² in a dry run) written with the data benchmark's generator."""
    sys.path.insert(0, str(BENCHMARKS))
    from data_throughput import write_archives

    _, fast = write_archives(folder, 16 if dry_run else 256, 64 if dry_run else 2048)
    return fast


def _cell(value, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def markdown(steps: list[Step], header: str) -> str:
    """suite.md: one table of every step, then the bench table (the training step's figures)."""
    lines = [f"# GPU suite: {header}", "", "| step | status | rc | s |", "|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s.name} | {s.result['status']} | {_cell(s.result.get('rc'))} | "
                     f"{_cell(s.result.get('seconds'))} |")  # fmt: skip
    lines += ["", "| bench | img/s | s/kimg | memory GB | TFLOP/s | % of dense peak |", "|---|---|---|---|---|---|"]
    for s in steps:
        f = s.result.get("figures")
        if s.kind.startswith("bench") and f:
            peak = None if f["peak_fraction"] is None else 100 * f["peak_fraction"]
            lines.append(f"| {s.name.removeprefix('bench ')} | {_cell(f['img_per_s'])} | {_cell(f['s_per_kimg'])} | "
                         f"{_cell(f['memory_gb'], 2)} | {_cell(f['tflops'], 2)} | {_cell(peak)} |")  # fmt: skip
    loader = next(s for s in steps if s.kind == "loader").result.get("figures")
    if loader:
        lines += ["", f"Data loader: {100 * loader['data_wait_share']:.1f}% of the step waiting for data at "
                  f"{loader['img_per_s']:.1f} img/s."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-suite"))
    parser.add_argument("--budget-s", type=float, help="Start no step after this many seconds [460; 1200 dry].")
    parser.add_argument("--dry-run", action="store_true", help="CPU: the plan, and the parts a CPU can run.")
    parser.add_argument("--only", nargs="+", metavar="STEP", help="Run only these steps; the others are skipped.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + (args.budget_s or (1200.0 if args.dry_run else 460.0))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / ("bench16.gfd" if args.dry_run else "bench256.gfd")
        steps = plan(args.dry_run, data, Path(tmp), args.out)
        unknown = set(args.only or []) - {step.name for step in steps}
        if unknown:
            parser.error(f"--only: no step named {', '.join(sorted(unknown))}; the steps are those of suite.md")
        for step in steps:
            if args.only and step.name not in args.only and step.run:
                step.run, step.why_not = False, "not in --only"
        if next(s for s in steps if s.kind == "loader").run:
            assert make_dataset(Path(tmp), args.dry_run) == data
        for step in steps:
            print(f"{'run ' if step.run else 'plan'} {step.name}: {' '.join(step.command)}", flush=True)
            execute(step, deadline, limited=not args.dry_run)
            print(f"     -> {step.result['status']} {step.result.get('seconds', '')}", flush=True)
            if "output_tail" in step.result or step.result["status"] == "failed":
                print(step.result.get("output_tail") or step.result.get("why"), flush=True)
    header = "dry run on CPU" if args.dry_run else "CUDA"
    record = [{"name": s.name, "command": s.command, **s.result} for s in steps]
    (args.out / "suite.json").write_text(json.dumps({"dry_run": args.dry_run, "steps": record}, indent=1))
    (args.out / "suite.md").write_text(markdown(steps, header))
    print(markdown(steps, header))
    failed = [s.name for s in steps if s.result["status"] in ("failed", "timeout")
              or s.result.get("rc", 0) not in GOOD_RC[s.kind]]  # fmt: skip
    print(f"failed: {', '.join(failed)}" if failed else "every step that ran succeeded")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
