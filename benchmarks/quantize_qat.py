"""What quantization-aware fine-tuning (`export --qat-kimg`) buys: the export check's FID delta and PSNR of int8
models with and without it, all layers in int8 and with --keep-float layers, on one set of latents; and the int8 and
fp32 models' speed in onnxruntime on this CPU.

For each variant the int8 model is made as `ganforge export` makes it (calibration on 128 latents, seed 1; QAT with
the export's settings and seed 3), and its images of the latents A (seed 1) are compared with the eager generator's:
PSNR, and FID delta = FID(B, X) - FID(B, A) with B the eager images of other latents (seed 2), the figure the check
limits. Features are cached in --out (features-NAME.npy, shared with quantize_gate_floor.py's), so a rerun with a
larger --count computes only what is new. Inception costs about 0.7 s per image on one CPU thread.

    .venv/bin/python benchmarks/quantize_qat.py --network SNAPSHOT --out DIR [--count 1024] [--qat-kimg 2]
        [--keep-float synthesis.b32.conv1] [--threads 2]
"""

import argparse
import json
import time
from pathlib import Path

import torch

from ganforge.export import onnx, qat, quantize
from ganforge.export.wrapper import DeployableGenerator
from ganforge.interop import load_network
from ganforge.metrics import inception
from ganforge.metrics.fid import frechet_distance
from quantize_gate_floor import SEEDS, features, images, mean_cov, psnr

CALIBRATION = {"calib": 128, "seed": 1, "per_channel": True}  # the export's defaults with --seed 0
QAT_SEED = 3
SPEED_BATCHES = {1: 200, 16: 30}  # batch size: timed calls


def int8_model(module: DeployableGenerator, layers: list[str], qat_images: int, path: Path) -> dict:
    """Write the int8 model of `module` with `layers` quantized, after QAT on `qat_images` (0: none); the QAT
    record (or {})."""
    record, ranges, source = {}, None, module
    if qat_images:
        source, ranges, record = qat.quantization_aware(module, layers, qat_images, CALIBRATION, QAT_SEED)
    traced = path.with_suffix(".float.onnx")
    onnx.export_onnx(source, traced, source.example_inputs(2, torch.Generator().manual_seed(0)))
    quantize.quantize_int8(traced, path, source, layers, **CALIBRATION, ranges=ranges)
    return record


def images_per_second(runner, module: DeployableGenerator, batch: int, calls: int) -> float:
    inputs = module.example_inputs(batch, torch.Generator().manual_seed(0))
    runner(*inputs)
    began = time.perf_counter()
    for _ in range(calls):
        runner(*inputs)
    return batch * calls / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=1024)
    parser.add_argument("--qat-kimg", type=float, default=2.0)
    parser.add_argument("--keep-float", default="synthesis.b32.conv1", help="layers of the keep-float variants")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    module = DeployableGenerator(load_network(args.network)[0])
    every = quantize.quantizable_layers(module)
    kept = args.keep_float.split(",")
    qat_images = round(args.qat_kimg * 1000)
    variants = {"int8": (every, 0), "int8 QAT": (every, qat_images)}
    variants |= {f"int8 keep {args.keep_float}": ([layer for layer in every if layer not in kept], 0)}
    variants |= {f"int8 keep {args.keep_float} QAT": ([layer for layer in every if layer not in kept], qat_images)}
    names = [spec.name for spec in module.inputs()]
    net = inception.load_inception()
    a_img = images(module, None, args.count, SEEDS["A"])
    a = features(net, a_img, args.out / "features-A.npy")
    b = features(net, images(module, None, args.count, SEEDS["B"]), args.out / "features-eager-B.npy")
    fid_eager = frechet_distance(*mean_cov(b), *mean_cov(a))
    float_path = args.out / "fp32.onnx"
    onnx.export_onnx(module, float_path, module.example_inputs(2, torch.Generator().manual_seed(0)))
    fp32 = onnx.OnnxRunner(float_path, names)
    speed = {"fp32": {n: images_per_second(fp32, module, n, calls) for n, calls in SPEED_BATCHES.items()}}
    rows = []
    for name, (layers, qat_count) in variants.items():
        slug = name.replace(" ", "-").replace(",", "+")
        path = args.out / f"{slug}.onnx"
        record = int8_model(module, layers, qat_count, path)
        runner = onnx.OnnxRunner(path, names)
        x_img = images(module, runner, args.count, SEEDS["A"])
        x = features(net, x_img, args.out / f"features-{slug}-qat{qat_count}.npy")
        fid_delta = frechet_distance(*mean_cov(b), *mean_cov(x)) - fid_eager
        speed[name] = {n: images_per_second(runner, module, n, calls) for n, calls in SPEED_BATCHES.items()}
        rows.append({"variant": name, "n": args.count, "psnr_db": psnr(a_img, x_img), "fid_delta": fid_delta,
                     "qat_mse": [record.get("mse_before"), record.get("mse_after")],
                     "qat_seconds": record.get("seconds")})  # fmt: skip
        print(rows[-1], flush=True)
    (args.out / "qat.json").write_text(json.dumps({"rows": rows, "speed": speed}, indent=1))
    batches = ", ".join(map(str, SPEED_BATCHES))
    print(f"\n| variant | N | PSNR dB | FID delta | simulated MSE before -> after QAT | img/s batch {batches} |")
    print("|---|---|---|---|---|---|")
    print(f"| fp32 | | | | | {', '.join(f'{v:.0f}' for v in speed['fp32'].values())} |")
    for row in rows:
        before, after = row["qat_mse"]
        mse = "" if before is None else f"{before:.2e} -> {after:.2e}"
        rate = ", ".join(f"{v:.0f}" for v in speed[row["variant"]].values())
        print(f"| {row['variant']} | {row['n']} | {row['psnr_db']:.1f} | {row['fid_delta']:.2f} | {mse} | {rate} |")


if __name__ == "__main__":
    main()
