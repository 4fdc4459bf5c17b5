"""Median forward+backward time of the StyleGAN2 generator and discriminator on CPU.

Defaults: 256 px, batch 4, config F channels (channel_base 16384, channel_max 512), 2 threads. The generator is
timed twice: with the training path of the modulated convolution (shared weights, activations scaled before and
after) and, as the baseline, with the fused grouped-convolution path that eval mode uses.

    .venv/bin/python benchmarks/nets_forward_backward.py [--resolution 256] [--batch 4] [--iters 5] [--threads 2]
"""

import argparse
import statistics
import time

import torch

from ganforge.nets import Discriminator, Generator


def median_seconds(step, iters: int) -> float:
    """Median wall time of `step()` over `iters` runs, after one untimed warm-up run."""
    step()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def generator_step(G: Generator, batch: int):
    z, c = torch.randn(batch, G.z_dim), torch.zeros(batch, 0)

    def step():
        G.zero_grad(set_to_none=True)
        G(z, c).square().mean().backward()

    return step


def discriminator_step(D: Discriminator, batch: int):
    img, c = torch.randn(batch, D.img_channels, D.resolution, D.resolution), torch.zeros(batch, 0)

    def step():
        D.zero_grad(set_to_none=True)
        D(img, c).sum().backward()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--channel-base", type=int, default=16384)
    parser.add_argument("--channel-max", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    arch = dict(resolution=args.resolution, channel_base=args.channel_base, channel_max=args.channel_max)
    G, D = Generator(**arch), Discriminator(**arch)
    print(f"{args.resolution} px, batch {args.batch}, channel_base {args.channel_base}, channel_max "
          f"{args.channel_max}, {args.threads} threads, torch {torch.__version__}, median of {args.iters}")  # fmt: skip
    rows = [  # name, network, training mode (selects the modulated-convolution path), step factory
        ("G (training path: shared-weight modconv)", G, True, generator_step),
        ("G (baseline: fused grouped modconv)", G, False, generator_step),
        ("D", D, True, discriminator_step),
    ]
    for name, net, training, make_step in rows:
        net.train(training)
        seconds = median_seconds(make_step(net, args.batch), args.iters)
        count = sum(p.numel() for p in net.parameters())
        print(f"{name:<42} {count:>11,} params   forward+backward {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
