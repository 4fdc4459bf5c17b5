"""Everything worth knowing about one GPU, in one run that fits seven minutes of an H100 or H200: the CUDA tests,
the training step in the precisions and implementations that matter, the memory model at 1024², and ganforge beside
the official StyleGAN2-ADA.

    python benchmarks/gpu_suite.py                       # on a GPU machine; writes to $OUT, else ./gpu-suite
    python benchmarks/gpu_suite.py --official shared/stylegan2-ada-pytorch   # with the side-by-side
    python benchmarks/gpu_suite.py --dry-run --out /tmp/suite   # CPU: print the plan, run what a CPU can run
    python benchmarks/gpu_suite.py --only "bench bf16 eager" "memory paper1024"   # just these steps (as in suite.md)

Steps, in this order (the most needed first, so a spent budget cuts the least), each a subprocess with its own time
limit:
1. `pytest -m cuda` over the test suite (the GPU-only tests, the steps under set_sync_debug_mode among them).
2. `ganforge bench --json` at 256² (paper256, batch 64) in bf16 and in fp16 (the official per-layer recipe:
   `--fp16-res 4`), eager with the reference ops: img/s, s/kimg, peak memory, share of the dense tensor peak.
3. The same with the Triton kernels (`--kernels triton`).
4. bf16 with channels-last.
5. bf16 compiled (`--compile`, the default mode).
6. StyleGAN3-T at 256², bf16: the reference ops, then the Triton kernels.
7. paper1024 at 1024²: the largest batch per device that the memory model (a trace of the step on fake tensors,
   benchmarks/step_memory.py --largest) predicts to fit the GPU's free memory, then one step of the bench at that
   batch; suite.md puts the predicted peak beside the allocator's.
8. ganforge beside the official StyleGAN2-ADA at paper256, batch 64 (benchmarks/vs_official.py --device cuda),
   with --official CHECKOUT (the official code is not part of ganforge; a GPU machine usually cannot clone it).
Then, while the budget lasts: `ganforge doctor`, a short `ganforge train` for the data loader's share of the step,
fp32 and tf32 eager, and torch.compile's CUDA-graph modes.

The whole suite stays inside --budget-s (400 s by default: with the start and the dataset, under seven minutes): a
step is cut at the deadline, and one that would start after it is recorded as skipped. The results go to suite.json
(every step's command, exit status, seconds, parsed figures and, where it failed, its output's tail), suite.md (the
tables) and cuda-tests.txt (pytest's whole report) in the output folder.

With --dry-run the same steps run at toy size on the CPU (16², the tiny presets, one timed call, the memory model
planning for --gpu-memory 0.55 up to 8 images), the CUDA tests are listed but not run (they would all skip),
entries that need a GPU (fp16, Triton, compiled, CUDA graphs) are planned but not run, and the side-by-side prints
its plan: the script's own plumbing is exercised where there is no GPU.
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
DEFAULT_BUDGET_S, DRY_BUDGET_S = 400.0, 1200.0
TIME_LIMIT_S = {"cuda-tests": 150, "bench": 45, "bench-compile": 120, "bench-sg3": 60, "memory": 60, "bench-big": 60,
                "vs-official": 150, "doctor": 60, "loader": 60, "bench-autotune": 150}  # fmt: skip
# Exit statuses that mean the step did its job: doctor exits 1 for warnings and 2 for failed checks, which are
# findings to read in its report, not a broken suite.
GOOD_RC = dict.fromkeys(TIME_LIMIT_S, (0,)) | {"doctor": (0, 1, 2)}
NEEDS_GPU = "needs a GPU (fp16, Triton, inductor and CUDA graphs have no CPU path worth a dry run)"


@dataclass
class Step:
    """One subprocess of the suite and what it produced. `command` may name the figures of an earlier step
    ("{batch_gpu}"), filled in when it runs."""

    name: str
    command: list[str]
    kind: str  # a key of TIME_LIMIT_S
    run: bool = True  # False: planned only (not runnable here)
    why_not: str = ""
    result: dict = field(default_factory=dict)
    keep_output: Path | None = None  # write the whole stdout and stderr here


def ganforge(*args: str) -> list[str]:
    return [sys.executable, "-m", "ganforge", *args]


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(BENCHMARKS / name), *args]


def _bench(name: str, kind: str, network: list[str], dry_run: bool, *flags: str, gpu_only: bool = False) -> Step:
    """One `ganforge bench --json` of `network` (on the GPU: 2 untimed, 2 repeats of 2 calls of every phase; a dry
    run: one call at 16² on the CPU)."""
    size = ["--resolution", "16", "--steps", "1", "--warmup", "0", "--repeat", "1", "--device", "cpu"] if dry_run \
        else ["--steps", "2", "--warmup", "1", "--repeat", "2", "--device", "cuda"]  # fmt: skip
    step = Step(name, ganforge("bench", *network, *size, "--json", *flags), kind)
    if dry_run and gpu_only:
        step.run, step.why_not = False, NEEDS_GPU
    return step


def main_steps(dry_run: bool, out: Path, official: str | None) -> list[Step]:
    """Steps 2 to 8 of the module's list."""
    paper256 = ["--cfg", "tiny"] if dry_run else ["--cfg", "paper256", "--batch-gpu", "64"]
    sg3 = ["--cfg", "tiny3"] if dry_run else ["--cfg", "stylegan3-t", "--resolution", "256"]
    bf16, fp16 = ["--precision", "bf16"], ["--precision", "fp16", "--fp16-res", "4"]
    reference, triton = ["--kernels", "reference"], ["--kernels", "triton"]
    steps = [
        _bench("bench bf16 eager", "bench", paper256, dry_run, *bf16, *reference),
        _bench("bench fp16 eager", "bench", paper256, dry_run, *fp16, *reference, gpu_only=True),
        _bench("bench bf16 triton", "bench", paper256, dry_run, *bf16, *triton, gpu_only=True),
        _bench("bench fp16 triton", "bench", paper256, dry_run, *fp16, *triton, gpu_only=True),
        _bench("bench bf16 channels-last", "bench", paper256, dry_run, *bf16, *reference, "--channels-last"),
        _bench("bench bf16 compile", "bench-compile", paper256, dry_run, *bf16, "--compile", gpu_only=True),
        _bench("kernels stylegan3-t reference", "bench-sg3", sg3, dry_run, *bf16, *reference),
        _bench("kernels stylegan3-t triton", "bench-sg3", sg3, dry_run, *bf16, *triton, gpu_only=True),
    ]
    planning = ["--cfg", "tiny", "--resolution", "16", "--precision", "fp32", "--gpu-memory", "0.55", "--max-batch",
                "8"] if dry_run else ["--cfg", "paper1024", "--resolution", "1024", "--precision", "bf16",
                                       "--device", "cuda"]  # fmt: skip
    steps.append(Step("memory paper1024", script("step_memory.py", "--largest", *planning), "memory"))
    big = ["--cfg", "tiny"] if dry_run else ["--cfg", "paper1024"]
    one_step = ["--steps", "1", "--warmup", "0", "--repeat", "1"]
    device = ["--resolution", "16", "--device", "cpu"] if dry_run else ["--device", "cuda"]
    precision = ["--precision", "fp32"] if dry_run else bf16
    steps.append(Step("bench paper1024 predicted batch", ganforge("bench", *big, *device, *one_step, *precision,
                                                                     "--batch-gpu", "{batch_gpu}", "--json"),
                      "bench-big"))  # fmt: skip
    side = script("vs_official.py", "--device", "cuda", "--rounds", "2", "--reps", "3", "--json",
                  str(out / "vs-official.json"), *(["--official", official] if official else []),
                  *(["--dry-run"] if dry_run else []))  # fmt: skip
    versus = Step("vs official paper256", side, "vs-official")
    if not official and not dry_run:
        versus.run, versus.why_not = False, "no --official checkout of NVlabs/stylegan2-ada-pytorch"
    return [*steps, versus]


def extra_steps(dry_run: bool, data: Path, out: Path) -> list[Step]:
    """What runs while the budget lasts: doctor, the loader's share of a short run, fp32 and tf32 eager, and
    torch.compile's CUDA-graph modes (max-autotune last: its tuning compiles for minutes)."""
    doctor = Step("doctor", ganforge("doctor", "--json", "--quick", "--outdir", str(out)), "doctor")
    kimg = "0.016" if dry_run else "0.256"
    preset = ["--cfg", "tiny", "--device", "cpu"] if dry_run else ["--cfg", "paper256", "--device", "cuda"]
    loader = Step("loader", ganforge("train", "--data", str(data), "--outdir", str(out / "loader-run"), *preset,
                                     "--kimg", kimg, "--tick", kimg, "--snap", "1", "--workers", "2", "--aug",
                                     "noaug", "--batch", "8" if dry_run else "64"), "loader")  # fmt: skip
    paper256 = ["--cfg", "tiny"] if dry_run else ["--cfg", "paper256", "--batch-gpu", "64"]
    steps = [doctor, loader]
    for precision in ("fp32", "tf32"):
        steps.append(_bench(f"bench {precision} eager", "bench", paper256, dry_run, "--precision", precision,
                            "--kernels", "reference", gpu_only=precision == "tf32"))  # fmt: skip
    for mode in ("reduce-overhead", "max-autotune"):
        kind = "bench-autotune" if mode == "max-autotune" else "bench-compile"
        steps.append(_bench(f"bench bf16 {mode}", kind, paper256, dry_run, "--precision", "bf16", "--compile", mode,
                            gpu_only=True))  # fmt: skip
    return steps


def plan(dry_run: bool, data: Path, out: Path, results: Path, official: str | None = None) -> list[Step]:
    """The steps in order; `out` is the scratch folder, `results` the one that is kept. Pytest's logging capture is
    off: a captured DEBUG log of torch.compile buried the failures' reasons under megabytes."""
    pytest = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "--tb=short", "-p", "no:cacheprovider", "-p",
              "no:logging", str(REPO / "tests")]  # fmt: skip
    cuda_tests = Step("cuda-tests", pytest, "cuda-tests", keep_output=results / "cuda-tests.txt")
    if dry_run:
        cuda_tests.run, cuda_tests.why_not = False, "needs a GPU (every test would skip)"
    return [cuda_tests, *main_steps(dry_run, results, official), *extra_steps(dry_run, data, out)]


def execute(step: Step, deadline: float, limited: bool, known: dict) -> None:
    """Run one step within the suite's deadline and, if `limited`, its own limit; record rc, seconds and the parsed
    figures. The per-step limits are sized for the GPU; a dry run on a busy CPU is bounded by the deadline alone.
    `known`: the figures of the steps run so far, which fill in the command's "{name}" parts."""
    limit = min(TIME_LIMIT_S[step.kind] if limited else float("inf"), deadline - time.monotonic())
    if step.run and any(str(known.get(name)) == "None" for name in _named(step.command)):
        step.run, step.why_not = False, f"an earlier step found no {', '.join(_named(step.command))}"
    if not step.run or limit <= 0:
        step.result = {"status": "skipped", "why": step.why_not or "the suite's time budget was spent"}
        return
    step.command = [part.format(**known) if "{" in part else part for part in step.command]
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


def _named(command: list[str]) -> list[str]:
    return [part[1:-1] for part in command if part.startswith("{") and part.endswith("}")]


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


def parse_memory(stdout: str, _step: Step) -> dict:
    """step_memory.py --largest's JSON: the batch, its traced peak, the memory it was planned for."""
    return json.loads(stdout.strip().splitlines()[-1])


def parse_versus(_stdout: str, step: Step) -> dict:
    """vs_official.py's JSON file: its setting and every process's seconds per phase and peak."""
    return json.loads(Path(step.command[step.command.index("--json") + 1]).read_text())


PARSERS = {"doctor": parse_doctor, "cuda-tests": parse_pytest, "loader": parse_loader, "memory": parse_memory,
           "vs-official": parse_versus} | dict.fromkeys(("bench", "bench-compile", "bench-sg3", "bench-big",
                                                        "bench-autotune"), parse_bench)  # fmt: skip


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
    predicted = next(s for s in steps if s.kind == "memory").result.get("figures")
    measured = next(s for s in steps if s.kind == "bench-big").result.get("figures")
    if predicted and predicted["batch_gpu"] is not None:
        allocator = f"; the allocator's peak at it: {measured['memory_gb']:.2f} GB" if measured else ""
        lines += ["", f"Memory model: paper1024 fits {predicted['batch_gpu']} images per device, traced "
                  f"{predicted['traced_gb']:.2f} GB of {predicted['available_gb']:.2f} GB{allocator}."]  # fmt: skip
    loader = next(s for s in steps if s.kind == "loader").result.get("figures")
    if loader:
        lines += ["", f"Data loader: {100 * loader['data_wait_share']:.1f}% of the step waiting for data at "
                  f"{loader['img_per_s']:.1f} img/s."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-suite"))
    parser.add_argument("--budget-s", type=float, help=f"The whole suite's seconds [{DEFAULT_BUDGET_S:g}; "
                        f"{DRY_BUDGET_S:g} dry].")  # fmt: skip
    parser.add_argument("--official", help="a checkout of NVlabs/stylegan2-ada-pytorch, for the side-by-side")
    parser.add_argument("--dry-run", action="store_true", help="CPU: the plan, and the parts a CPU can run.")
    parser.add_argument("--only", nargs="+", metavar="STEP", help="Run only these steps; the others are skipped.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    budget = args.budget_s if args.budget_s is not None else DRY_BUDGET_S if args.dry_run else DEFAULT_BUDGET_S
    deadline = time.monotonic() + budget
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / ("bench16.gfd" if args.dry_run else "bench256.gfd")
        steps = plan(args.dry_run, data, Path(tmp), args.out, args.official)
        unknown = set(args.only or []) - {step.name for step in steps}
        if unknown:
            parser.error(f"--only: no step named {', '.join(sorted(unknown))}; the steps are those of suite.md")
        for step in steps:
            if args.only and step.name not in args.only and step.run:
                step.run, step.why_not = False, "not in --only"
        known = {}
        for step in steps:
            if step.kind == "loader" and step.run and deadline > time.monotonic():  # written only when it will run
                assert make_dataset(Path(tmp), args.dry_run) == data
            print(f"{'run ' if step.run else 'plan'} {step.name}: {' '.join(step.command)}", flush=True)
            execute(step, deadline, not args.dry_run, known)
            known |= step.result.get("figures") if step.kind == "memory" and "figures" in step.result else {}
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
