"""Soak test of the two-rank lifecycle: many back-to-back tiny `torchrun --nproc-per-node 2` runs, counting the runs
that did not exit 0 and the final states that differ from an uninterrupted reference.

The runs cycle through three kinds:
  full           a fresh run to its end;
  rerun-at-end   the same command again on a finished run (it resumes at its end and exits at once: the case where
                 a rank used to abort at exit with "terminate called without an active exception");
  killed+resumed a fresh run SIGKILLed (launcher and workers) once its last checkpoint is on disk, then rerun.
A final state "differs" when the newest checkpoint's tensors.safetensors is not byte-identical to the reference's.

    .venv/bin/python benchmarks/soak_two_ranks.py                 # 50 runs of the installed ganforge
    .venv/bin/python benchmarks/soak_two_ranks.py --runs 10
    .venv/bin/python benchmarks/soak_two_ranks.py --src /tmp/old/src   # another source tree (e.g. an older commit)
"""

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import PIL.Image

KIMG = "0.032"  # 4 steps of 8 images, a checkpoint every 2 steps
TRAIN = ["--cfg", "tiny", "--batch", "8", "--kimg", KIMG, "--tick", "0.016", "--snap", "1", "--seed", "3",
         "--workers", "0", "--device", "cpu"]  # fmt: skip
KINDS = ("full", "rerun-at-end", "killed+resumed")
TIMEOUT_S = 300


def make_dataset(root: Path) -> Path:
    """16 smooth random 8x8 RGB images as a dataset archive, built by the installed ganforge."""
    from ganforge.data.build import BuildOptions, build

    (root / "src").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(16):
        coarse = rng.integers(0, 256, size=(2, 2, 3), dtype=np.uint8)
        PIL.Image.fromarray(coarse).resize((8, 8), PIL.Image.BILINEAR).save(root / "src" / f"{i:02d}.png")
    build(root / "src", root / "tiny.zip", BuildOptions(resolution=8, workers=0))
    return root / "tiny.zip"


class Launcher:
    """Starts `torchrun -m ganforge train` for one OUTDIR, with the source tree under test first on the path."""

    def __init__(self, data: Path, src: Path | None):
        self.data = data
        self.env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        if src is not None:
            self.env["PYTHONPATH"] = os.pathsep.join([str(src), self.env.get("PYTHONPATH", "")])

    def command(self, outdir: Path) -> list[str]:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "ganforge",
                "train", "--data", str(self.data), "--outdir", str(outdir), *TRAIN]  # fmt: skip

    def run(self, outdir: Path) -> tuple[int, str]:
        proc = subprocess.run(self.command(outdir), env=self.env, capture_output=True, text=True, timeout=TIMEOUT_S)
        return proc.returncode, proc.stdout + proc.stderr

    def start(self, outdir: Path) -> subprocess.Popen:
        return subprocess.Popen(self.command(outdir), env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip

    def which_ganforge(self) -> str:
        code = "import ganforge; print(ganforge.__file__)"
        return subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True).stdout.strip()


def final_digest(outdir: Path) -> str | None:
    """SHA-256 of the newest checkpoint's tensors.safetensors, or None when the run reached no final checkpoint."""
    found = sorted(outdir.glob(f"*/checkpoints/ckpt-{round(float(KIMG) * 1000):09d}/tensors.safetensors"))
    return hashlib.sha256(found[-1].read_bytes()).hexdigest() if found else None


def descendants(pid: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [grand for child in map(int, children) for grand in (child, *descendants(child))]


def kill_after_last_checkpoint(launcher: Launcher, outdir: Path) -> None:
    """SIGKILL the launcher and its workers as soon as the final checkpoint is committed (before they exit)."""
    proc = launcher.start(outdir)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while final_digest(outdir) is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        for pid in [proc.pid, *descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def one_run(kind: str, launcher: Launcher, work: Path, index: int, finished: Path) -> tuple[int, str | None, str]:
    """-> (exit status of the run that must succeed, final digest, its output); `finished` is a completed OUTDIR."""
    if kind == "rerun-at-end":
        outdir = finished
    else:
        outdir = work / f"run{index:03d}"
        if kind == "killed+resumed":
            kill_after_last_checkpoint(launcher, outdir)
    status, output = launcher.run(outdir)
    return status, final_digest(outdir), output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--src", type=Path, help="Source folder holding the ganforge package to test.")
    parser.add_argument("--keep", action="store_true", help="Keep the work folder (its path is printed).")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ganforge-soak-"))
    launcher = Launcher(make_dataset(work / "data"), args.src)
    print(f"ganforge under test: {launcher.which_ganforge()}\nwork folder: {work}", flush=True)
    status, output = launcher.run(work / "reference")
    reference = final_digest(work / "reference")
    assert status == 0 and reference is not None, f"the reference run failed (exit {status}):\n{output[-3000:]}"

    counts = {kind: [0, 0, 0] for kind in KINDS}  # runs, non-zero exits, differing final states
    finished, start = work / "reference", time.monotonic()
    for index in range(args.runs):
        kind = KINDS[index % len(KINDS)]
        status, digest, output = one_run(kind, launcher, work, index, finished)
        counts[kind][0] += 1
        counts[kind][1] += status != 0
        counts[kind][2] += digest != reference
        if status != 0 or digest != reference:
            tail = "\n    ".join(output.strip().splitlines()[-6:])
            print(f"run {index} ({kind}): exit {status}, final state {'same' if digest == reference else 'DIFFERS'}"
                  f"\n    {tail}", flush=True)  # fmt: skip
        if kind == "full" and status == 0:
            finished = work / f"run{index:03d}"

    print(f"\n{args.runs} two-rank runs in {time.monotonic() - start:.0f} s")
    print("| kind | runs | non-zero exits | differing final tensors |\n|---|---|---|---|")
    for kind, (runs, bad_exits, differing) in counts.items():
        print(f"| {kind} | {runs} | {bad_exits} | {differing} |")
    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if totals[1] or totals[2] else 0)


if __name__ == "__main__":
    main()
