"""The noise floor of the export check: which statistic tells a harmful export from a harmless one, at what count.

`ganforge export` judges fp16 and int8 models by comparing the images of the eager generator (set A) with the
exported model's images of the same latents. Here each statistic the check could use is measured for these pairings:

    eager B         an independent eager set (other latents): the estimator's floor between two samples of one model
    noise           A plus Gaussian pixel noise at the int8 export's PSNR (harmless: no viewer sees 2-3 levels of noise)
    noise x4        4x that noise's rms (12 dB lower PSNR: visibly grainy, the harmful reference)
    fp16, int8      the exports (`ganforge export --precision fp16|int8`, default settings)

and for each count N (prefixes of one set of latents, so the counts are nested):

    paired FID      FID(A[:N], X[:N]), what the check computes today
    FID delta       FID(B[:N], X[:N]) - FID(B[:N], A[:N]): how much further X is from an independent eager sample than
                    A is; the two terms share B and X's latents, so most of the estimator's bias cancels
    KID +- se       unbiased KID between A's even and X's odd images (independent halves), with a standard error from
                    8 disjoint blocks
    feature dist    the mean squared Inception-feature distance of the pairs (A_i, X_i), relative to that of two
                    independent eager images (A_i, B_i): 0 for an identical export, 1 for one that changes each image as
                    much as drawing another latent

Features are cached in --out (features-NAME.npy) so a rerun, or a run with larger counts, computes only what is new.
Inception costs about 0.7 s per image on one CPU thread: 6 sets of 1,024 images take about 75 CPU-minutes.

    .venv/bin/python benchmarks/quantize_gate_floor.py --network SNAPSHOT --out DIR [--counts 128,256,512,1024]
"""

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from ganforge.export import onnx, quantize
from ganforge.export.check import as_nchw_float, as_nchw_uint8
from ganforge.export.wrapper import DeployableGenerator
from ganforge.interop import load_network
from ganforge.metrics import inception
from ganforge.metrics.fid import frechet_distance
from ganforge.metrics.kid import mmd2_unbiased
from ganforge.numerics import fp32_math

BATCH = 16
KID_BLOCKS = 8
SEEDS = {"A": 1, "B": 2}
NOISE_X4 = 4.0


def exports(module: DeployableGenerator, folder: Path) -> dict[str, onnx.OnnxRunner]:
    """The fp16 and int8 models as `ganforge export` makes them by default (written once into `folder`)."""
    names = [spec.name for spec in module.inputs()]
    traced = folder / "float.onnx"
    if not traced.exists():
        onnx.export_onnx(module, traced, module.example_inputs(2, torch.Generator().manual_seed(0)))
    fp16, int8 = folder / "fp16.onnx", folder / "int8.onnx"
    if not fp16.exists():
        onnx.convert_fp16(traced, fp16, onnx.scoped_nodes(traced, "G.mapping"))
    if not int8.exists():
        quantize.quantize_int8(traced, int8, module, quantize.quantizable_layers(module), 128, 1)
    return {"fp16": onnx.OnnxRunner(fp16, names), "int8": onnx.OnnxRunner(int8, names)}


def images(module: DeployableGenerator, runner, count: int, seed: int) -> torch.Tensor:
    """float64 [count, C, H, W] images of `count` inputs drawn with `seed`, by `runner` (None: eager), clipped to
    [-1, 1] as when saved (so that PSNR and the noise are those of the images Inception sees)."""
    generator, parts = torch.Generator().manual_seed(seed), []
    for start in range(0, count, BATCH):
        inputs = module.example_inputs(min(BATCH, count - start), generator)
        with torch.no_grad(), fp32_math(tf32=False):
            parts.append(as_nchw_float(module(*inputs) if runner is None else runner(*inputs)))
    return torch.cat(parts).clamp(-1, 1)


def psnr(reference: torch.Tensor, other: torch.Tensor) -> float:
    mse = (other - reference).square().mean().item()
    return math.inf if mse == 0 else 10 * math.log10(2.0**2 / mse)


def with_noise(img: torch.Tensor, target_db: float, seed: int) -> torch.Tensor:
    """`img` plus Gaussian noise, clipped to [-1, 1] as saved, at PSNR `target_db`: the noise's scale is found by
    bisection, since clipping removes part of the noise wherever pixels sit at the ends of the range."""
    noise = torch.randn(img.shape, generator=torch.Generator().manual_seed(seed), dtype=img.dtype)
    low, high = 0.0, 2.0
    for _ in range(40):
        sigma = (low + high) / 2
        low, high = (sigma, high) if psnr(img, (img + noise * sigma).clamp(-1, 1)) > target_db else (low, sigma)
    return (img + noise * (low + high) / 2).clamp(-1, 1)


def features(net, img: torch.Tensor, path: Path) -> np.ndarray:
    """Inception features of `img` (rounded to uint8 as saved), cached at `path` for the leading rows computed."""
    done = np.load(path) if path.exists() else np.zeros((0, inception.FEATURE_DIM), np.float32)
    if len(done) >= len(img):
        return done[: len(img)]
    start = time.perf_counter()
    parts = [done]
    for first in range(len(done), len(img), BATCH):
        parts.append(net(as_nchw_uint8(img[first : first + BATCH].to(torch.float32))).numpy())
    result = np.concatenate(parts)
    np.save(path, result)
    rate = (time.perf_counter() - start) / (len(img) - len(done))
    print(f"  features {path.stem}: {len(img) - len(done)} images, {rate:.2f} s/image", flush=True)
    return result


def mean_cov(x: np.ndarray):
    x = x.astype(np.float64)
    return x.mean(0), np.cov(x, rowvar=False)


def kid_blocks(a: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Unbiased KID between a's even and x's odd rows, and its standard error from KID_BLOCKS disjoint blocks."""
    even, odd = torch.from_numpy(a[0::2]).double(), torch.from_numpy(x[1::2]).double()
    value = mmd2_unbiased(even, odd).item()
    size = min(len(even), len(odd)) // KID_BLOCKS
    blocks = [mmd2_unbiased(even[i * size : (i + 1) * size], odd[i * size : (i + 1) * size]).item()
              for i in range(KID_BLOCKS)]  # fmt: skip
    # each block has 1/KID_BLOCKS of the pairs; the estimate's variance falls as 1/n to first order
    return value, float(np.std(blocks, ddof=1) / math.sqrt(KID_BLOCKS))


def statistics(a: np.ndarray, b: np.ndarray, x: np.ndarray, reference: np.ndarray | None) -> dict:
    """The statistics of X (`x`) against A (`a`), B (`b`) independent of both scaling the feature distance, and the
    FID delta taken against `reference` (independent of A and X) when there is one."""
    kid, kid_se = kid_blocks(a, x)
    between = np.square(a - b).sum(1).mean()
    found = {"fid_paired": frechet_distance(*mean_cov(a), *mean_cov(x)), "kid": kid, "kid_se": kid_se,
             "feature_distance": float(np.square(a - x).sum(1).mean() / between), "fid_delta": math.nan}  # fmt: skip
    if reference is not None:
        found["fid_delta"] = frechet_distance(*mean_cov(reference), *mean_cov(x)) - frechet_distance(
            *mean_cov(reference), *mean_cov(a)
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--counts", default="128,256,512,1024")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    counts = [int(n) for n in args.counts.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    G, _ = load_network(args.network)
    module = DeployableGenerator(G)
    runners = exports(module, args.out)
    top = max(counts)
    sets = {"A": images(module, None, top, SEEDS["A"]), "eager B": images(module, None, top, SEEDS["B"])}
    sets |= {name: images(module, runner, top, SEEDS["A"]) for name, runner in runners.items()}
    int8_psnr = psnr(sets["A"], sets["int8"])
    sets["noise"] = with_noise(sets["A"], int8_psnr, 3)
    sets["noise x4"] = with_noise(sets["A"], int8_psnr - 20 * math.log10(NOISE_X4), 4)  # 4x the rms: 12 dB less
    pixel = {name: psnr(sets["A"], img) for name, img in sets.items() if name != "A"}
    print(f"PSNR against A over {top} images: " + ", ".join(f"{k} {v:.1f} dB" for k, v in pixel.items()))
    net = inception.load_inception()
    feats = {name: features(net, img, args.out / f"features-{name.replace(' ', '-')}.npy")
             for name, img in sets.items()}  # fmt: skip
    table = []
    for n in counts:
        a, b = feats["A"][:n], feats["eager B"][:n]
        for name in ("eager B", "noise", "fp16", "int8", "noise x4"):
            # B's delta needs a third independent set: A's images beyond n, where there are n of them
            reference = b if name != "eager B" else feats["A"][n : 2 * n] if 2 * n <= top else None
            stats = statistics(a, b, feats[name][:n], reference)
            table.append({"n": n, "set": name, "psnr_db": pixel[name]} | stats)
    (args.out / "floor.json").write_text(json.dumps(table, indent=1))
    print("\n| N | compared with eager A | PSNR dB | paired FID | FID delta | KID ± se | feature dist |")
    print("|---|---|---|---|---|---|---|")
    for row in table:
        print(f"| {row['n']} | {row['set']} | {row['psnr_db']:.1f} | {row['fid_paired']:.2f} | {row['fid_delta']:.2f}"
              f" | {row['kid']:.5f} ± {row['kid_se']:.5f} | {row['feature_distance']:.4f} |")  # fmt: skip


if __name__ == "__main__":
    main()
