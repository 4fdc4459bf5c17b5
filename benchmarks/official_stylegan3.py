"""Pickles written by NVlabs' own StyleGAN3 code, read by ganforge: the images ganforge makes from them against the
images the official code makes, plain, translated and rotated, and a short fine-tuning run from each.

NVlabs/stylegan3 builds a Generator of `training/networks_stylegan3.py` (configs T and R, random weights, 16x16),
a Discriminator of `training/networks_stylegan2.py` and an AugmentPipe, and pickles them as its training loop writes a
snapshot (deep copies in eval mode, `pickle.dump` of {G, D, G_ema, augment_pipe, training_set_kwargs}); it then makes
images as its gen_images.py does (z from `np.random.RandomState(seed)`, the inverse of the user's translation and
rotation in `synthesis.input.transform`, constant noise, `img * 127.5 + 128` clamped to uint8). ganforge generates the
same seeds with --translate/--rotate/--trunc from the file; the table gives the largest difference in grey levels.

    .venv/bin/python benchmarks/official_stylegan3.py --official ~/src/stylegan3
    .venv/bin/python benchmarks/official_stylegan3.py                        # clones NVlabs/stylegan3 into --cache
    .venv/bin/python benchmarks/official_stylegan3.py --official-python ~/np1/bin/python \
        --fixture tests/interop/fixtures

The official code is never part of ganforge (its licence is non-commercial): it runs from a checkout, in a process of
its own, under --official-python (a Python with torch, numpy and scipy; numpy 1.x writes `numpy.core` names, numpy 2
`numpy._core`). `--fixture DIR` writes what tests/interop uses: the same pickles with the module source that NVlabs'
persistence wrapper embeds replaced by a marker (so no official source is committed), and the official images.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

OFFICIAL_URL = "https://github.com/NVlabs/stylegan3"
RESOLUTION, SEEDS = 16, (0, 1, 2)
# name -> (truncation psi, (translate x, y) in image widths, rotation in degrees counter-clockwise)
CASES = {"plain": (1.0, (0.0, 0.0), 0.0), "rotated": (1.0, (0.0, 0.0), 30.0), "moved": (0.7, (0.3, -0.2), 45.0)}
MARKER_SOURCE = 'import os\nos.environ["GANFORGE_FIXTURE_SOURCE_RAN"] = "1"\n'  # what a fixture's module source does
TARGET_STD = 0.45  # the images' spread in [-1, 1] units, so that a grey level is a small part of it


def official_networks(config: str, batch: int = 32):
    """The official G (random weights), D and AugmentPipe of a tiny StyleGAN3-`config`, with the kwargs that the
    official train.py records for the configuration (R: 1x1 convolutions, radial filters, widths doubled)."""
    import torch
    from dnnlib import EasyDict
    from training import augment, networks_stylegan2, networks_stylegan3

    torch.manual_seed(3)
    kwargs = EasyDict(z_dim=8, c_dim=0, w_dim=8, img_resolution=RESOLUTION, img_channels=3, channel_base=256,
                      channel_max=16, num_layers=4, mapping_kwargs=EasyDict(num_layers=2),
                      magnitude_ema_beta=0.5 ** (batch / (20 * 1e3)))  # fmt: skip
    if config == "r":
        kwargs.update(conv_kernel=1, use_radial_filters=True, channel_base=512, channel_max=32)
    G = networks_stylegan3.Generator(**kwargs)
    D = networks_stylegan2.Discriminator(
        c_dim=0, img_resolution=RESOLUTION, img_channels=3, channel_base=256, channel_max=16,
        block_kwargs=EasyDict(freeze_layers=0), mapping_kwargs=EasyDict(),
        epilogue_kwargs=EasyDict(mbstd_group_size=4),
    )  # fmt: skip
    pipe = augment.AugmentPipe(xflip=1, rotate90=1, xint=1, scale=1, rotate=1, aniso=1, xfrac=1, brightness=1,
                               contrast=1, lumaflip=1, hue=1, saturation=1)  # fmt: skip
    pipe.p.copy_(torch.as_tensor(0.25))
    randomise(G)
    return G, D, pipe


def randomise(G) -> None:
    """Random weights, w_avg and input magnitudes, the last layer's magnitude set so that images spread by about
    TARGET_STD (random weights alone give images a few grey levels wide)."""
    import numpy as np
    import torch

    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in G.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        for name, b in G.named_buffers():
            if name.endswith("magnitude_ema"):
                b.copy_(torch.rand([], generator=generator) + 0.5)
            elif name.endswith("w_avg"):
                b.copy_(torch.randn(b.shape, generator=generator) * 0.5)
        last = getattr(G.synthesis, G.synthesis.layer_names[-1]).magnitude_ema
        last.fill_(1.0)
        z = torch.from_numpy(np.random.RandomState(123).randn(8, G.z_dim))
        spread = G(z, torch.zeros([8, 0]), noise_mode="const").std().item()
        last.fill_((spread / TARGET_STD) ** 2)


def snapshot(G, D, pipe) -> dict:
    """What the official training loop pickles: deep copies in eval mode without gradients, on the CPU."""
    import copy

    data = dict(G=G, D=D, G_ema=G, augment_pipe=pipe,
                training_set_kwargs=dict(class_name="training.dataset.ImageFolderDataset", path="data.zip",
                                         use_labels=False, max_size=None, xflip=False, resolution=RESOLUTION,
                                         random_seed=0))  # fmt: skip
    for key, value in data.items():
        if hasattr(value, "eval"):
            data[key] = copy.deepcopy(value).eval().requires_grad_(False).cpu()
    return data


def official_images(G, case: str):
    """gen_images.py's procedure: the inverse of the image's motion in the input transform, constant noise."""
    import numpy as np
    import torch

    psi, (tx, ty), degrees = CASES[case]
    angle = degrees / 360 * 2 * np.pi
    motion = np.array([[np.cos(angle), np.sin(angle), tx], [-np.sin(angle), np.cos(angle), ty], [0, 0, 1]])
    G.synthesis.input.transform.copy_(torch.from_numpy(np.linalg.inv(motion)))
    images = []
    for seed in SEEDS:
        z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim))
        with torch.no_grad():
            image = G(z, torch.zeros([1, 0]), truncation_psi=psi, noise_mode="const")
        images.append((image.permute(0, 2, 3, 1) * 127.5 + 128).clamp(0, 255).to(torch.uint8)[0].numpy())
    return np.stack(images)


def official_worker(args) -> None:
    """In the official code's process: for T and R, a snapshot pickle and the official images of every case."""
    import numpy as np

    sys.path[:0] = [args.official, args.shim]
    out = Path(args.out)
    for config in ("t", "r"):
        G, D, pipe = official_networks(config)
        data = snapshot(G, D, pipe)
        with open(out / f"stylegan3-{config}.pkl", "wb") as file:
            pickle_dump(data, file, args.protocol, args.marker)
        images = {case: official_images(data["G_ema"], case) for case in CASES}
        np.savez(out / f"stylegan3-{config}-official-images.npz", **images)


def pickle_dump(data, file, protocol: int, marker: bool) -> None:
    """pickle.dump as the training loop calls it; with `marker`, every persistent class embeds MARKER_SOURCE instead
    of its module's source while it is written (deep copies go through the same reduction, so only then)."""
    import pickle

    classes = {type(m) for v in data.values() if hasattr(v, "modules") for m in v.modules()}
    classes = {c: c._orig_module_src for c in classes if marker and hasattr(c, "_orig_module_src")}
    for cls in classes:
        cls._orig_module_src = MARKER_SOURCE
    try:
        pickle.dump(data, file, protocol=protocol if protocol else pickle.DEFAULT_PROTOCOL)
    finally:
        for cls, source in classes.items():
            cls._orig_module_src = source


def official_checkout(args) -> str:
    if args.official:
        return str(Path(args.official).expanduser().resolve())
    target = Path(args.cache).expanduser() / "stylegan3"
    if not (target / "training" / "networks_stylegan3.py").exists():
        subprocess.run(["git", "clone", "--depth", "1", OFFICIAL_URL, str(target)], check=True)
    return str(target)


def write_official(args, out: Path, marker: bool) -> None:
    """Run the official side in its own process. Its conv2d_gradfix imports setuptools' pkg_resources for a version
    comparison; a one-line stand-in from `packaging` serves where setuptools no longer ships it."""
    shim = out / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "pkg_resources.py").write_text("from packaging.version import parse as parse_version\n")
    command = [args.official_python, __file__, "--worker", "--official", args.official, "--shim", str(shim),
               "--out", str(out), "--protocol", str(args.protocol)] + (["--marker"] if marker else [])  # fmt: skip
    subprocess.run(command, check=True)


def ganforge_images(pkl: Path, case: str, scratch: Path):
    import numpy as np
    from PIL import Image

    psi, (tx, ty), degrees = CASES[case]
    outdir = scratch / f"{pkl.stem}-{case}"
    command = [sys.executable, "-m", "ganforge", "generate", "--network", str(pkl), "--outdir", str(outdir),
               "--seeds", ",".join(map(str, SEEDS)), "--trunc", str(psi), "--translate", f"{tx},{ty}",
               "--rotate", str(degrees)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    return np.stack([np.asarray(Image.open(path)) for path in sorted(outdir.glob("*.png"))])


def fine_tune(pkl: Path, scratch: Path) -> str:
    """A few steps of `train --resume` from the pickle on a folder of random RGB images; -> the last output line."""
    import numpy as np
    from PIL import Image

    data = scratch / "rgb"
    data.mkdir(exist_ok=True)
    for i in range(32):
        pixels = np.random.default_rng(i).integers(0, 256, (RESOLUTION, RESOLUTION, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(data / f"{i:02d}.png")
    command = [sys.executable, "-m", "ganforge", "train", "--data", str(data), "--outdir", str(scratch / "runs"),
               "--resume", str(pkl), "--kimg", "0.032", "--batch", "8", "--tick", "0.016", "--snap", "1",
               "--workers", "0", "--no-report"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return f"exit {done.returncode}: {lines[-1] if lines else ''}"


def compare(out: Path, scratch: Path) -> list[dict]:
    import numpy as np

    rows = []
    for config in ("t", "r"):
        pkl = out / f"stylegan3-{config}.pkl"
        official = np.load(out / f"stylegan3-{config}-official-images.npz")
        for case in CASES:
            ours = ganforge_images(pkl, case, scratch).astype(int)
            theirs = official[case].astype(int)
            rows.append(dict(config=config, case=case, max_grey_levels=int(np.abs(ours - theirs).max()),
                             differing=float((ours != theirs).mean()), spread=float(theirs.std())))  # fmt: skip
        rows.append(dict(config=config, case="fine-tune", result=fine_tune(pkl, scratch)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official", default="", help="a checkout of NVlabs/stylegan3")
    parser.add_argument("--cache", default="~/.cache/ganforge-bench", help="where to clone it without --official")
    parser.add_argument("--official-python", default=sys.executable, help="the Python that runs the official code")
    parser.add_argument("--protocol", type=int, default=0, help="pickle protocol (0: that Python's default)")
    parser.add_argument("--fixture", default="", help="write the test fixtures into this folder")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shim", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--marker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return official_worker(args)
    args.official = official_checkout(args)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.fixture) if args.fixture else Path(scratch) / "official"
        out.mkdir(parents=True, exist_ok=True)
        write_official(args, out, marker=bool(args.fixture))
        rows = compare(out, Path(scratch))
        if args.fixture:
            (out / "shim" / "pkg_resources.py").unlink()
            (out / "shim").rmdir()
    print("| config | case | largest difference (grey levels) | pixels differing | official images' std |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        if "result" in row:
            print(f"| {row['config'].upper()} | fine-tune | {row['result']} | | |")
        else:
            print(f"| {row['config'].upper()} | {row['case']} | {row['max_grey_levels']} | {row['differing']:.1%} "
                  f"| {row['spread']:.1f} |")  # fmt: skip
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
