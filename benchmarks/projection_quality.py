"""How close `ganforge project` gets, and how fast, on this machine: PSNR, SSIM and the perceptual distance after each
length of projection (separate runs: the official schedule stretches with the length) in W and W+, then with pivotal
tuning; and seconds per step of projection and of tuning for a 256 px config-F generator (random weights: only its
speed is measured).

    .venv/bin/python benchmarks/projection_quality.py --network G.safetensors --targets a.png b.png \
        [--steps 100,500,1000] [--tune-g 100] [--perceptual inception] [--timing-steps 5]
    .venv/bin/python benchmarks/projection_quality.py --digits   # the digits demo: a tiny network trained briefly
    .venv/bin/python benchmarks/projection_quality.py --digits --network G.safetensors   # digits, a network you have

`--digits` trains the tiny preset on the digits 0-4 for `--digits-kimg` kimg (about 6 CPU-minutes) and projects
scans of the digits 5-9 (never seen) and 0-4 (seen), so that the figures come from a trained network and real images.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.demo import write_digit_pngs
from ganforge.metrics.perceptual import load_perceptual, squared_distance
from ganforge.nets import Generator
from ganforge.project import ProjectOptions, project
from ganforge.snapshot import save_snapshot


def measure(network: Path, targets: list[Path], out: Path, space: str, steps: int, tune_g: int, perceptual: str):
    """One projection run; -> mean PSNR, SSIM, final distance over the targets (projection, and tuned when asked),
    and the seconds per step."""
    folder = out / f"{space}-{steps}-{tune_g}"
    started = time.monotonic()
    options = ProjectOptions(network=network, targets=tuple(targets), outdir=folder, space=space, steps=steps,
                             tune_g=tune_g, perceptual=perceptual, batch=len(targets))  # fmt: skip
    summary = project(options)
    seconds = time.monotonic() - started
    folders = [Path(s["folder"]) for s in summary["targets"]]
    records = [json.loads((folder / "projection.json").read_text()) for folder in folders]
    row = {"space": space, "steps": steps, "tune_g": tune_g, "seconds": round(seconds, 1),
           "psnr": _mean(r["final"]["psnr_db"] for r in records), "ssim": _mean(r["final"]["ssim"] for r in records),
           "distance": _mean(r["distances"][-1] for r in records),
           "inception_distance": inception_distance(folders, "proj.png")}  # fmt: skip
    if tune_g:
        row |= {"tuned_psnr": _mean(r["tuning"]["final"]["psnr_db"] for r in records),
                "tuned_ssim": _mean(r["tuning"]["final"]["ssim"] for r in records),
                "tuned_distance": _mean(r["tuning"]["distances"][-1] for r in records),
                "tuned_inception_distance": inception_distance(folders, "proj_tuned.png")}  # fmt: skip
    print(json.dumps(row), flush=True)
    return row


def inception_distance(folders: list[Path], image: str) -> float:
    """The mean of the default `--perceptual inception` distance between each folder's target.png and `image`
    (proj.png or proj_tuned.png), whatever distance the projection optimised: one figure comparable across runs."""
    features = load_perceptual("inception", torch.device("cpu"))

    def read(path: Path) -> torch.Tensor:
        pixels = np.asarray(PIL.Image.open(path), dtype=np.float32)  # [H, W] or [H, W, C], 0-255
        return torch.from_numpy(pixels.reshape(*pixels.shape[:2], -1)).permute(2, 0, 1)

    with torch.no_grad():
        targets, images = (torch.stack([read(f / name) for f in folders]) for name in ("target.png", image))
        return _mean(squared_distance(features(targets), features(images)).tolist())


def _mean(values) -> float:
    return round(float(np.mean([v for v in values])), 4)


def speed_256(out: Path, perceptual: str, steps: int) -> dict:
    """Seconds per step of projection (one target) and of pivotal tuning for a 256 px config-F StyleGAN2."""
    torch.manual_seed(0)
    G = Generator(resolution=256, img_channels=3, z_dim=512, w_dim=512, channel_base=16384, channel_max=512,
                  mapping_layers=8)  # fmt: skip
    network = out / "config-f-256.safetensors"
    save_snapshot(network, G, {})
    target = out / "photo.png"
    PIL.Image.fromarray(np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)).save(target)
    times = {}
    for tune_g in (0, steps):
        started = time.monotonic()
        project(ProjectOptions(network=network, targets=(target,), outdir=out / f"speed-{tune_g}", steps=steps,
                               tune_g=tune_g, perceptual=perceptual))  # fmt: skip
        times[tune_g] = time.monotonic() - started
    tuning = (times[steps] - times[0]) / steps
    return {"project_s_per_step": round(times[0] / steps, 2), "tune_s_per_step": round(tuning, 2)}


def digits(out: Path, kimg: float, network: Path | None) -> tuple[Path, list[Path]]:
    """A tiny network trained on the digits 0-4 (or `network`, one trained so already: benchmarks/transfer_digits.py's
    pretraining), and two scans each of 5-9 and 0-4 to project."""
    scans = out / "scans"
    scans.mkdir(parents=True, exist_ok=True)
    write_digit_pngs(scans)
    chosen = sorted(scans.iterdir())
    pick = [next(p for p in chosen if p.stem.split("-")[1] == str(d)) for d in (5, 7, 0, 3)]
    if network is not None:
        return network, pick
    early = out / "digits04"
    early.mkdir(exist_ok=True)
    for path in scans.iterdir():
        if int(path.stem.split("-")[1]) < 5:
            shutil.copy(path, early / path.name)
    archive = out / "digits04.zip"
    run = [sys.executable, "-m", "ganforge"]
    subprocess.run([*run, "dataset", "build", str(early), str(archive), "--transform", "none", "--channels", "1"],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    subprocess.run([*run, "train", "--data", str(archive), "--outdir", str(out / "runs"), "--cfg", "tiny", "--kimg",
                    str(kimg), "--workers", "0", "--no-report"], check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    (network,) = sorted((out / "runs").glob("*/snapshots/*.safetensors"))[-1:]
    return network, pick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", type=Path)
    parser.add_argument("--targets", type=Path, nargs="*")
    parser.add_argument("--digits", action="store_true", help="train a tiny network on the digits 0-4 and use it")
    parser.add_argument("--digits-kimg", type=float, default=10.0)
    parser.add_argument("--steps", default="100,500,1000")
    parser.add_argument("--tune-g", type=int, default=100, help="pivotal tuning steps after the longest projection")
    parser.add_argument("--perceptual", default="inception")
    parser.add_argument("--timing-steps", type=int, default=5, help="steps timed at 256 px (0: skip)")
    parser.add_argument("--out", type=Path, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="projection-"))
    network, targets = digits(out, args.digits_kimg, args.network) if args.digits else (args.network, args.targets)
    if network is None or not targets:
        parser.error("give --network and --targets, or --digits")
    lengths = [int(s) for s in args.steps.split(",")]
    # the longest projection runs once, with the tuning after it: its record holds the pivot's figures as well
    runs = [(space, steps, args.tune_g if steps == lengths[-1] else 0) for space in ("w", "wplus") for steps in lengths]
    rows = [measure(network, targets, out, space, steps, tune_g, args.perceptual) for space, steps, tune_g in runs]
    print(f"\n{len(targets)} targets, --perceptual {args.perceptual}, {torch.get_num_threads()} threads\n")
    print("| space | steps | PTI steps | PSNR dB | SSIM | distance optimised | Inception distance | s/step (projection "
          "and tuning together) |\n| --- | --- | --- | --- | --- | --- | --- | --- |")  # fmt: skip
    for r in rows:
        per_step = f"{r['seconds'] / (r['steps'] + r['tune_g']):.2f}"
        print(f"| {r['space']} | {r['steps']} | - | {r['psnr']} | {r['ssim']} | {r['distance']} | "
              f"{r['inception_distance']} | {per_step} |")  # fmt: skip
        if r["tune_g"]:
            print(f"| {r['space']} | {r['steps']} | {r['tune_g']} | {r['tuned_psnr']} | {r['tuned_ssim']} | "
                  f"{r['tuned_distance']} | {r['tuned_inception_distance']} | {per_step} |")  # fmt: skip
    if args.timing_steps:
        print(f"\n256 px config-F (random weights), one target: {speed_256(out, args.perceptual, args.timing_steps)}")


if __name__ == "__main__":
    main()
