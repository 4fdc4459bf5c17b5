"""Median forward+backward time of the StyleGAN2 generator and discriminator on CPU; with --stylegan3, of the
StyleGAN3-T and -R generators, their peak memory and the filtered leaky ReLU's share of the step.

Defaults: 256 px, batch 4, config F channels (channel_base 16384, channel_max 512), 2 threads. As the baseline
for the choice of modulated-convolution path, every generator block's conv1 is also timed (forward+backward)
with the shared-weight path ganforge uses on CPU, with the fused grouped-convolution path of the official
inference code (which ganforge keeps for CUDA inference), and as a plain unmodulated conv2d of the same shape.

With --stylegan3, each of T and R at each --sg3-resolutions runs in its own process, so that its peak resident
memory (VmHWM) minus the memory before the first step is the step's own peak. One further step runs under
torch.profiler: the filtered lrelu's share is the CPU time of its forward ops plus the backward nodes of those ops
(matched by autograd sequence number), over all ops' CPU time.

    .venv/bin/python benchmarks/nets_forward_backward.py [--resolution 256] [--batch 4] [--iters 5] [--threads 2]
    .venv/bin/python benchmarks/nets_forward_backward.py --stylegan3 [--sg3-resolutions 64,256] [--batch 4]
"""

import argparse
import multiprocessing
import os
import statistics
import time

import torch
import torch.nn.functional as F

from ganforge.nets import Discriminator, Generator, StyleGAN3Generator
from ganforge.nets.layers import modulated_conv2d

PATHS = ("shared", "fused", "plain")


def median_seconds(step, iters: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of `step()` over `iters` runs, after one untimed warm-up run.

    On a shared machine the wall time grows with other load; CPU time (all threads) grows much less.
    """
    step()
    wall, cpu = [], []
    for _ in range(iters):
        start, start_cpu = time.perf_counter(), time.process_time()
        step()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def network_step(net, inputs):
    """One forward+backward of `net(*inputs)` with a scalar loss; gradients are dropped before each run."""

    def step():
        net.zero_grad(set_to_none=True)
        net(*inputs).square().mean().backward()

    return step


def modconv_step(layer, batch: int, path: str):
    """Forward+backward of one synthesis layer's convolution: "shared" or "fused" modulated, or "plain" conv2d."""
    out_ch, in_ch = layer.weight.shape[:2]
    x = torch.randn(batch, in_ch, layer.resolution, layer.resolution, requires_grad=True)
    styles = torch.randn(batch, in_ch, requires_grad=True)

    def step():
        layer.zero_grad(set_to_none=True)
        if path == "plain":
            y = F.conv2d(x, layer.weight, padding=1)
        else:
            y = modulated_conv2d(x, layer.weight, styles, fused=path == "fused")
        y.square().mean().backward()

    return step


def resident_mib(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process in MiB, from /proc (Linux)."""
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def _descendants(event):
    for child in event.cpu_children:
        yield child
        yield from _descendants(child)


def filtered_lrelu_share(step) -> tuple[float, float]:
    """(forward, backward) CPU seconds of the filtered lrelu in one profiled step, over all ops' CPU seconds."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
    events = prof.events()
    ranges = [e for e in events if e.name == "filtered_lrelu"]
    sequence = {d.sequence_nr for r in ranges for d in _descendants(r) if d.sequence_nr >= 0}
    backward = [e for e in events if e.name.startswith("autograd::engine::evaluate_function") and
                e.sequence_nr in sequence]  # fmt: skip
    total = sum(e.self_cpu_time_total for e in events)
    return sum(e.cpu_time_total for e in ranges) / total, sum(e.cpu_time_total for e in backward) / total


def stylegan3_figures(config: str, resolution: int, args) -> dict:
    """One configuration's figures, measured in this (fresh) process."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    G = StyleGAN3Generator(resolution=resolution, channel_base=args.channel_base, channel_max=args.channel_max,
                           config=config).train()  # fmt: skip
    z, c = torch.randn(args.batch, G.z_dim), torch.zeros(args.batch, 0)
    before = resident_mib("VmRSS")
    step = network_step(G, (z, c))
    wall, cpu = median_seconds(step, args.iters)
    peak = resident_mib("VmHWM") - before
    forward, backward = filtered_lrelu_share(step)
    params = sum(p.numel() for p in G.parameters())
    return dict(wall=wall, cpu=cpu, peak=peak, forward=forward, backward=backward, params=params)


def run_stylegan3(args) -> None:
    print(f"StyleGAN3 generator, batch {args.batch}, channel_base {args.channel_base}, channel_max "
          f"{args.channel_max} (config R doubles both), {args.threads} threads, median of {args.iters} after 1 "
          "warm-up; peak = resident memory high-water mark minus resident memory before the first step")  # fmt: skip
    context = multiprocessing.get_context("spawn")  # a fresh process per configuration: its own peak memory
    for resolution in (int(r) for r in args.sg3_resolutions.split(",")):
        for config in ("t", "r"):
            with context.Pool(1) as pool:
                f = pool.apply(stylegan3_figures, (config, resolution, args))
            share = f["forward"] + f["backward"]
            print(f"StyleGAN3-{config.upper()} {resolution:>4} px: {f['params']:>11,} params   forward+backward "
                  f"{f['wall'] * 1000:9.1f} ms wall, {f['cpu'] * 1000:9.1f} ms CPU   peak +{f['peak']:7.0f} MiB   "
                  f"filtered lrelu {share:5.1%} of CPU time (forward {f['forward']:.1%}, backward "
                  f"{f['backward']:.1%})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--channel-base", type=int, default=16384)
    parser.add_argument("--channel-max", type=int, default=512)
    parser.add_argument("--stylegan3", action="store_true", help="StyleGAN3-T/R instead of StyleGAN2")
    parser.add_argument("--sg3-resolutions", default="64,256", help="comma-separated, with --stylegan3")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, torch {torch.__version__}")
    if args.stylegan3:
        run_stylegan3(args)
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    arch = dict(resolution=args.resolution, channel_base=args.channel_base, channel_max=args.channel_max)
    G, D = Generator(**arch), Discriminator(**arch)
    n = args.batch
    print(f"{args.resolution} px, batch {n}, channel_base {args.channel_base}, channel_max {args.channel_max}, "
          f"{args.threads} threads, torch {torch.__version__}, median of {args.iters} after 1 warm-up")  # fmt: skip
    z, img, c = torch.randn(n, G.z_dim), torch.randn(n, D.img_channels, D.resolution, D.resolution), torch.zeros(n, 0)
    for name, net, inputs in [("G", G, (z, c)), ("D", D, (img, c))]:
        wall, cpu = median_seconds(network_step(net.train(), inputs), args.iters)
        count = sum(p.numel() for p in net.parameters())
        print(f"{name}: {count:>11,} params   forward+backward {wall * 1000:8.1f} ms wall, {cpu * 1000:8.1f} ms CPU")
    print("baseline, per block conv1 forward+backward CPU ms: shared-weight modconv (used on CPU), fused grouped "
          "modconv (official inference path), plain unmodulated conv2d (lower bound)")  # fmt: skip
    for res in G.synthesis.block_resolutions:
        layer = getattr(G.synthesis, f"b{res}").conv1
        times = [median_seconds(modconv_step(layer, n, path), args.iters)[1] * 1000 for path in PATHS]
        print(f"  {res:>4} px {layer.weight.shape[0]:>4} ch  " + "".join(f"{t:10.1f}" for t in times))


if __name__ == "__main__":
    main()
