"""ganforge's StyleGAN2 networks beside the official StyleGAN2-ADA networks (NVlabs/stylegan2-ada-pytorch), on CPU
(fp32) or a GPU (paper256's recipe): each phase of a training iteration timed by one driver for both, and each side's
peak memory.

    .venv/bin/python benchmarks/vs_official.py --official ~/src/stylegan2-ada-pytorch --res 64 --rounds 5
    .venv/bin/python benchmarks/vs_official.py                     # clones the official code into ~/.cache first
    python benchmarks/vs_official.py --device cuda --official shared/stylegan2-ada-pytorch   # 256², batch 64
    python benchmarks/vs_official.py --device cuda --dry-run       # CPU: the plan and the JSON, nothing timed

On a GPU (`--device cuda`) the defaults are paper256's: 256x256, batch 64, the official mixed-precision recipe (the
4 highest resolutions in float16, activations clamped at 256: `--fp16-res 4`); the official side builds its CUDA
plugins (bias_act, upfirdn2d: a C++/CUDA compiler and ninja are needed, once, into torch's extension cache) and
ganforge's takes `--kernels` (triton where Triton is installed); each phase is timed between device synchronisations,
and the peak is torch.cuda.max_memory_allocated. A GPU machine usually cannot clone: give --official a checkout.

The official code is never part of ganforge (its licence is non-commercial): give a checkout with --official, or the
benchmark clones it (git, network needed) into --cache. On CPU the official networks run their reference ops (their
CUDA kernels and conv2d_gradfix are for CUDA only), which is how an official user on CPU trains.

The driver is the same for both sides, so the figures are the networks' own speed: the same architecture (config F
channels: channel base 16384, at most 512, mapping 8 layers, conv clamp 256, no fp16 layers), batch, images and
losses, and each network built as its own training builds it on CPU (ganforge: `use_cpu_kernels`, its numeric
policy for float32 on CPU). The phases, as the official training loop runs them (only the trained network's
parameters require gradients, the other one's are frozen):

- G main: softplus(-D(G(z))), backward, Adam step of G;
- D main: softplus(D(G(z))) + softplus(-D(real)) (two D passes, as the official loss does; `ganforge train` runs
  them as one, which comes on top), backward, Adam step of D;
- D R1: D(real) with the input's gradient, the penalty |grad|^2 (Mescheder et al. 2018, eq. 9) times gamma/2
  and the lazy interval 16 (Karras et al. 2020a, Sec. 4.1), backward through the gradient, Adam step of D.

"iteration" is G main + D main. Each (side, allocator) runs in a fresh process, so its peak RSS (VmHWM) is its own;
the sides take turns in interleaved rounds (A B B A ...) so both see the same machine load; figures are medians over
rounds of each process's median of --reps timed runs after one warm-up. --allocator runs both sides with glibc's
default allocator ("default") and with the setting the `ganforge` command makes for itself ("kept": freed memory kept
for the next step, ganforge.allocator), which any program could make: the second row is the networks' own speed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PHASES = ("G_main", "D_main", "D_R1")
OFFICIAL_URL = "https://github.com/NVlabs/stylegan2-ada-pytorch"
ARCH = dict(channel_base=16384, channel_max=512, conv_clamp=256)
CUDA_DEFAULTS = dict(res=256, batch=64, fp16_res=4)  # paper256 as the official code trains it
CPU_DEFAULTS = dict(res=64, batch=8, fp16_res=0)
R1_GAMMA, R1_INTERVAL = 1.0, 16


def official_networks(checkout: str, res: int, fp16_res: int):
    sys.path.insert(0, checkout)
    from training.networks import Discriminator, Generator

    synthesis = dict(ARCH, num_fp16_res=fp16_res)
    G = Generator(z_dim=512, c_dim=0, w_dim=512, img_resolution=res, img_channels=3,
                  mapping_kwargs=dict(num_layers=8), synthesis_kwargs=synthesis)  # fmt: skip
    D = Discriminator(c_dim=0, img_resolution=res, img_channels=3, num_fp16_res=fp16_res, **ARCH)
    return G, D


def ganforge_networks(res: int, fp16_res: int, device: str, kernels: str):
    """As `ganforge train` builds them for the device: the CPU's Winograd paths there, `kernels` on CUDA."""
    from ganforge.devices import pick_kernels
    from ganforge.nets import Discriminator, Generator
    from ganforge.nets.kernels import kernel_ops, use_kernels

    G = Generator(resolution=res, img_channels=3, mapping_layers=8, num_fp16_res=fp16_res, **ARCH)
    D = Discriminator(resolution=res, img_channels=3, num_fp16_res=fp16_res, **ARCH)
    if device == "cpu":
        G.use_cpu_kernels()
        D.use_cpu_kernels()
    use_kernels(kernel_ops(pick_kernels(kernels, device, False)[0]), G, D)
    return G, D


def make_phases(G, D, res: int, batch: int, device: str):
    """The three phases as closures over the networks, their optimisers and one fixed batch of images and latents,
    on `device`; on CUDA each phase ends with a device synchronisation, so that the host's clock times its work."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)
    real = (torch.rand([batch, 3, res, res], generator=generator) * 2 - 1).to(device)
    z = torch.randn([batch, 512], generator=generator).to(device)
    G, D = G.to(device), D.to(device)
    wait = torch.cuda.synchronize if device == "cuda" else lambda: None
    adam = dict(lr=0.0025, betas=(0.0, 0.99), eps=1e-8)
    opt_G, opt_D = torch.optim.Adam(G.parameters(), **adam), torch.optim.Adam(D.parameters(), **adam)

    def train(optimiser, loss):
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        wait()

    def g_main():
        G.requires_grad_(True)
        D.requires_grad_(False)
        train(opt_G, F.softplus(-D(G(z, None), None)).mean())

    def d_main():
        G.requires_grad_(False)
        D.requires_grad_(True)
        fake = G(z, None)
        train(opt_D, F.softplus(D(fake, None)).mean() + F.softplus(-D(real, None)).mean())

    def d_r1():
        G.requires_grad_(False)
        D.requires_grad_(True)
        x = real.detach().requires_grad_(True)
        logits = D(x, None)
        (grad,) = torch.autograd.grad(logits.sum(), x, create_graph=True)
        penalty = grad.square().sum([1, 2, 3]) * (R1_GAMMA / 2 * R1_INTERVAL)
        train(opt_D, (logits * 0 + penalty).mean())

    return dict(G_main=g_main, D_main=d_main, D_R1=d_r1)


def peak_mb(device: str) -> float:
    """This process's peak: the CUDA allocator's on a GPU, else the resident set's (VmHWM)."""
    if device == "cuda":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker(args) -> None:
    """One side in this process: build, warm up, time each phase --reps times; print the medians as JSON."""
    if args.allocator == "kept":
        from ganforge.allocator import keep_freed_memory

        assert keep_freed_memory(), "the allocator setting needs glibc"
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.side == "official":
        G, D = official_networks(args.official, args.res, args.fp16_res)
    else:
        G, D = ganforge_networks(args.res, args.fp16_res, args.device, args.kernels)
    phases = make_phases(G.train(), D.train(), args.res, args.batch, args.device)
    seconds = {}
    for name, phase in phases.items():
        phase()
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            phase()
            times.append(time.perf_counter() - start)
        seconds[name] = statistics.median(times)
    print(json.dumps(dict(seconds=seconds, peak_rss_mb=peak_mb(args.device))))


def run_side(args, side: str, allocator: str) -> dict:
    command = [sys.executable, __file__, "--worker", side, "--allocator", allocator, "--official", args.official,
               "--res", str(args.res), "--batch", str(args.batch), "--reps", str(args.reps),
               "--threads", str(args.threads), "--device", args.device, "--fp16-res", str(args.fp16_res),
               "--kernels", args.kernels]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), PYTHONWARNINGS="ignore")
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def official_checkout(args) -> str:
    if args.official:
        return str(Path(args.official).expanduser().resolve())
    target = Path(args.cache).expanduser() / "stylegan2-ada-pytorch"
    if not (target / "training" / "networks.py").exists():
        subprocess.run(["git", "clone", "--depth", "1", OFFICIAL_URL, str(target)], check=True)
    return str(target)


def ratio_rows(results: dict, allocator: str) -> list[str]:
    """One table row: official / ganforge time for each phase and the iteration; ganforge / official peak RSS."""

    def median(side, key):
        rounds = results[(side, allocator)]
        if key == "iteration":
            return statistics.median(r["seconds"]["G_main"] + r["seconds"]["D_main"] for r in rounds)
        if key == "peak_rss_mb":
            return statistics.median(r["peak_rss_mb"] for r in rounds)
        return statistics.median(r["seconds"][key] for r in rounds)

    cells = [f"{median('official', k) / median('ganforge', k):.2f}x" for k in ("iteration", *PHASES)]
    rss = median("ganforge", "peak_rss_mb") / median("official", "peak_rss_mb")
    times = [f"{median(side, k):.3f}" for side in ("official", "ganforge") for k in ("iteration", *PHASES)]
    return [f"| {allocator} | " + " | ".join(cells) + f" | {rss:.2f}x |", f"| {allocator} (s) | " + " | ".join(times)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official", default="", help="a checkout of NVlabs/stylegan2-ada-pytorch")
    parser.add_argument("--cache", default="~/.cache/ganforge-bench", help="where to clone it without --official")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--res", type=int, help="image size [64; cuda 256]")
    parser.add_argument("--batch", type=int, help="images per step [8; cuda 64]")
    parser.add_argument("--fp16-res", type=int, help="highest resolutions in float16, both sides [0; cuda 4]")
    parser.add_argument("--kernels", default="auto", choices=("auto", "triton", "reference"), help="ganforge's ops")
    parser.add_argument("--rounds", type=int, default=4, help="processes per side and allocator")
    parser.add_argument("--reps", type=int, default=2, help="timed runs of each phase per process")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--allocator", nargs="+", choices=["default", "kept"], help="[default kept; cuda default]")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and write the JSON; time nothing")
    parser.add_argument("--worker", choices=["official", "ganforge"], help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    defaults = CUDA_DEFAULTS if args.device == "cuda" else CPU_DEFAULTS
    for name, value in defaults.items():
        setattr(args, name, value if getattr(args, name) is None else getattr(args, name))
    # The allocator setting is glibc's, for host memory: on a GPU only the default is measured.
    args.allocator = args.allocator or (["default"] if args.device == "cuda" else ["default", "kept"])
    return args


def plan(args) -> list[tuple[int, str, str]]:
    """(round, allocator, side) in the order they run: the sides take turns, A B B A ..."""
    order = []
    for round_index in range(args.rounds):
        sides = ("official", "ganforge") if round_index % 2 == 0 else ("ganforge", "official")
        order += [(round_index, allocator, side) for allocator in args.allocator for side in sides]
    return order


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        args.side, args.allocator = args.worker, args.allocator[0]
        return worker(args)
    setting = f"{args.res}x{args.res}, batch {args.batch}, fp16 at the top {args.fp16_res} resolutions, {args.device}"
    if args.dry_run:
        runs = [{"round": r, "allocator": a, "side": side} for r, a, side in plan(args)]
        print(f"plan: {setting}; {len(runs)} processes")
        if args.json:
            args.json.write_text(json.dumps({"setting": setting, "dry_run": True, "runs": runs}, indent=1))
        return None
    args.official = official_checkout(args)
    results = {}
    for round_index, allocator, side in plan(args):
        result = run_side(args, side, allocator)
        results.setdefault((side, allocator), []).append(result)
        print(f"round {round_index} {allocator:7s} {side:8s} {json.dumps(result)}", flush=True)
    print(f"\n{setting}, {args.threads} threads, {args.rounds} rounds x {args.reps} reps")
    memory = "peak memory" if args.device == "cuda" else "peak RSS"
    print(f"| allocator | iteration | G main | D main | D R1 | {memory} |")
    print("| --- | --- | --- | --- | --- | --- |")
    for allocator in args.allocator:
        print("\n".join(ratio_rows(results, allocator)))
    print(f"Speed: official seconds / ganforge seconds (higher is faster); {memory}: ganforge / official (lower is "
          "leaner).")  # fmt: skip
    print("The (s) rows: seconds of iteration, G, D, R1: official then ganforge.")
    if args.json:
        runs = [{"side": side, "allocator": a, **r} for (side, a), rounds in results.items() for r in rounds]
        args.json.write_text(json.dumps({"setting": setting, "dry_run": False, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
