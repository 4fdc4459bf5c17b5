"""Which layers int8 hurts, and which quantizer settings hurt least, on a trained generator (CPU).

1. One layer at a time: each quantizable convolution quantized alone (ganforge's default int8 settings), the rest in
   float; its PSNR against the float model over --images images and, through Inception over the same images, the
   paired feature distance and FID delta of benchmarks/quantize_gate_floor.py (against an independent eager set B).
   The ranking `--keep-float auto` uses (export/sensitivity.py over 32 latents: Inception features, as when the check
   measures FID; pixels with --images 0) is printed beside it.
2. Every layer quantized, for each weight scale (per-channel, per-tensor) and calibration method (minmax, percentile,
   entropy): the same figures.

Features are cached in --out like the floor benchmark's; --images 0 measures pixels only.

    .venv/bin/python benchmarks/quantize_sensitivity.py --network SNAPSHOT --out DIR [--images 128]
"""

import argparse
import json
from pathlib import Path

import torch

from ganforge.export import onnx, quantize, sensitivity
from ganforge.export.check import as_nchw_uint8
from ganforge.export.wrapper import DeployableGenerator
from ganforge.interop import load_network
from ganforge.metrics import inception
from quantize_gate_floor import SEEDS, features, images, psnr, statistics

CALIB_LATENTS = 128
CALIB_SEED = 1  # the export's: --seed 0, plus one


def measure(module, net, path: Path, count: int, reference: torch.Tensor, feats: dict, name: str, out: Path) -> dict:
    """PSNR of the model at `path` against the float images, and the Inception statistics when `net` is given."""
    runner = onnx.OnnxRunner(path, [spec.name for spec in module.inputs()])
    img = images(module, runner, count, SEEDS["A"])
    row = {"psnr_db": psnr(reference, img)}
    if net is not None:
        found = statistics(feats["A"], feats["B"], features(net, img, out / f"features-{name}.npy"), feats["B"])
        row |= {key: found[key] for key in ("feature_distance", "fid_delta", "kid", "kid_se")}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--images", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    G, _ = load_network(args.network)
    module = DeployableGenerator(G)
    traced = args.out / "float.onnx"
    if not traced.exists():
        onnx.export_onnx(module, traced, module.example_inputs(2, torch.Generator().manual_seed(0)))
    layers = quantize.quantizable_layers(module)
    count = max(args.images, 32)
    reference = images(module, onnx.OnnxRunner(traced, [s.name for s in module.inputs()]), count, SEEDS["A"])
    net, feats = (inception.load_inception(), {}) if args.images else (None, {})
    if net is not None:
        eager = {"A": images(module, None, count, SEEDS["A"]), "B": images(module, None, count, SEEDS["B"])}
        feats = {name: features(net, img, args.out / f"features-{name}.npy") for name, img in eager.items()}

    def quantize_only(chosen: list[str], path: Path, per_channel: bool = True, method: str = "minmax") -> None:
        quantize.quantize_int8(traced, path, module, chosen, CALIB_LATENTS, CALIB_SEED, per_channel, method, show=False)

    def by_features(img: torch.Tensor) -> torch.Tensor:
        return net(as_nchw_uint8(img)).double()

    ranking = sensitivity.rank_layers(
        traced, module, layers, quantize_only, 32, 0, args.out, by_features if net is not None else None
    )
    rank_of = {effect.layer: i + 1 for i, effect in enumerate(ranking)}
    rows = []
    for layer in layers:
        path = args.out / f"only-{layer}.onnx"
        quantize_only([layer], path)
        rows.append(
            {"quantized": layer, "auto rank": rank_of[layer]}
            | measure(module, net, path, count, reference, feats, f"only-{layer}", args.out)
        )
    for per_channel in (True, False):
        for method in quantize.CALIBRATORS:
            name = f"all {'per-channel' if per_channel else 'per-tensor'} {method}"
            path = args.out / f"{name.replace(' ', '-')}.onnx"
            quantize_only(layers, path, per_channel, method)
            rows.append({"quantized": name} | measure(module, net, path, count, reference, feats,
                                                      name.replace(" ", "-"), args.out))  # fmt: skip
    (args.out / "sensitivity.json").write_text(json.dumps(rows, indent=1))
    by = "Inception-feature" if net is not None else "pixel"
    print(f"\n{count} images; auto rank: order of export/sensitivity.py's {by} ranking (1 = kept in float first)")
    print("| int8 | auto rank | PSNR dB | feature dist | FID delta | KID ± se |\n|---|---|---|---|---|---|")
    for row in rows:
        stats = (f"{row['feature_distance']:.4f} | {row['fid_delta']:.2f} | {row['kid']:.5f} ± {row['kid_se']:.5f}"
                 if "kid" in row else "— | — | —")  # fmt: skip
        print(f"| {row['quantized']} | {row.get('auto rank', '—')} | {row['psnr_db']:.1f} | {stats} |")


if __name__ == "__main__":
    main()
