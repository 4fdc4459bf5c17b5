"""Speed and quality of exported generators against the eager one, on CPU.

For each generator (the tiny preset's 32 px, and config-F channel tables at 64 and 256 px, random weights unless
--network is given) this exports ONNX fp32, fp16 and int8 and pt2 fp32 through `ganforge export` (each with its
check; fp16 and int8 with FID/KID over --fid images), then times, at batch 1 and 16: eager fp32, eager bf16 (CPU
autocast), onnxruntime (CPU provider) fp32, fp16 and int8, and pt2 (torch.export.load). Each figure is the median of
--repeats timed calls after one warm-up call; latency is per call, img/s is batch / latency. GPU figures (fp16 on
CUDA, the TensorRT provider) are not measured here: ganforge's check runs the eager generator on the CPU.

    .venv/bin/python benchmarks/export_speed.py [--sizes 32,64,256] [--batches 1,16] [--repeats 3] [--fid 64]
        [--network SNAPSHOT] [--threads 2]
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from ganforge.export import ExportOptions, export_network
from ganforge.export.onnx import OnnxRunner
from ganforge.export.pt2 import Pt2Runner
from ganforge.export.wrapper import DeployableGenerator
from ganforge.interop import load_network
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

CONFIGS = {
    32: dict(resolution=32, z_dim=64, w_dim=64, channel_base=512, channel_max=64, mapping_layers=2),
    64: dict(resolution=64, z_dim=512, w_dim=512, channel_base=16384, channel_max=512, mapping_layers=8),
    256: dict(resolution=256, z_dim=512, w_dim=512, channel_base=16384, channel_max=512, mapping_layers=8),
}
NO_LIMIT = 1e9  # the benchmark reports the figures; it does not refuse


def median_seconds(run, repeats: int) -> float:
    run()  # warm-up: first-call allocations, onnxruntime's lazy initialisation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def export_all(snapshot: Path, folder: Path, fid: int) -> dict:
    """{name: (path, card)} of every export."""
    plans = {"onnx fp32": ("onnx", "fp32", 0), "onnx fp16": ("onnx", "fp16", fid), "onnx int8": ("onnx", "int8", fid),
             "pt2 fp32": ("pt2", "fp32", 0)}  # fmt: skip
    exports = {}
    for name, (fmt, precision, fid_images) in plans.items():
        out = folder / f"{name.replace(' ', '-')}.{fmt}"
        start = time.perf_counter()
        options = ExportOptions(snapshot, out, format=fmt, precision=precision, check=16, check_fid=fid_images,
                                max_abs_diff=NO_LIMIT, max_fid_delta=NO_LIMIT)  # fmt: skip
        card = export_network(options)
        print(f"  exported {name} in {time.perf_counter() - start:.0f} s, {card['file_bytes'] / 1e6:.1f} MB: "
              f"{quality(card['check'])}", flush=True)  # fmt: skip
        exports[name] = (out, card)
    return exports


def quality(check: dict) -> str:
    text = f"max abs diff {check['max_abs_diff']:.3g}, PSNR {check['psnr_db']:.1f} dB"
    return text + (
        f", FID delta {check['fid_delta']:.3f}, KID {check['kid']:.4f} ({check['fid_images']} img)"
        if check["fid_delta"] is not None
        else ""
    )


def runners(module: DeployableGenerator, exports: dict) -> dict:
    """{name: callable(*inputs)} for everything timed, all on the CPU."""
    names = [spec.name for spec in module.inputs()]

    def bf16(*inputs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return module(*inputs)

    timed = {"eager fp32": module, "eager bf16": bf16}
    for name, (path, _) in exports.items():
        if name.startswith("onnx"):
            timed[f"ort {name.split()[1]}"] = runner = OnnxRunner(path, names)
            runner.session.set_providers(["CPUExecutionProvider"])
    timed["pt2 fp32"] = Pt2Runner(exports["pt2 fp32"][0])
    return timed


def bench(size: int, args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        snapshot = args.network or folder / "G.safetensors"
        if args.network is None:
            torch.manual_seed(0)
            save_snapshot(snapshot, Generator(**CONFIGS[size]), {})
        G, _ = load_network(snapshot)
        print(
            f"{G.resolution} px generator, {sum(p.numel() for p in G.parameters()) / 1e6:.1f} M parameters", flush=True
        )
        exports = export_all(Path(snapshot), folder, args.fid)
        module = DeployableGenerator(G)
        timed = runners(module, exports)
        for batch in args.batches:
            inputs = module.example_inputs(batch, torch.Generator().manual_seed(1))
            for name, run in timed.items():
                with torch.no_grad():
                    seconds = median_seconds(lambda run=run, inputs=inputs: run(*inputs), args.repeats)
                print(f"  batch {batch:3d}  {name:18s} {seconds * 1e3:9.1f} ms/call  {batch / seconds:8.2f} img/s",
                      flush=True)  # fmt: skip
        cards = {name: card["check"] for name, (_, card) in exports.items()}
        print(json.dumps({"resolution": G.resolution, "checks": cards}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="32,64,256", help="Generators to build (ignored with --network).")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fid", type=int, default=64, help="Images of the FID/KID check of fp16 and int8.")
    parser.add_argument("--network", type=Path, help="Benchmark this generator instead of random ones.")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (onnxruntime uses all cores).")
    args = parser.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} torch threads, CPU")
    for size in [0] if args.network else [int(s) for s in args.sizes.split(",")]:
        bench(size, args)


if __name__ == "__main__":
    main()
