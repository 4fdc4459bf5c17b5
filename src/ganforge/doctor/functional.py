"""End-to-end checks: a tiny StyleGAN2 forward and backward, and all-reduce between local processes."""

import contextlib
import dataclasses
import datetime
import math
import queue as queue_lib
import time

import torch
import torch.distributed as tdist

from ganforge.doctor import report as r
from ganforge.doctor.gpu import GpuProps, precision_check
from ganforge.numerics import fp32_math

SECTION = "functional"
HOST = "127.0.0.1"
SLOW_BUS_GBS = 5.0  # below PCIe 3.0 x16 speed, NCCL is probably going through sockets or host memory
_TINY = {"resolution": 16, "img_channels": 3, "c_dim": 0, "z_dim": 32, "w_dim": 32, "channel_base": 512}
_TINY.update({"channel_max": 32, "mapping_layers": 2})


def _autocast(precision: str, device: torch.device):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def tiny_step(device: torch.device, precision: str, batch: int = 4) -> dict:
    """One generator step of a tiny StyleGAN2 in `precision`: G(z) -> D -> loss -> backward through both."""
    # A private RNG stream: the check is repeatable and leaves the caller's random state untouched.
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(0)
        return _step(device, precision, batch)


def _step(device: torch.device, precision: str, batch: int) -> dict:
    from ganforge.nets import Discriminator, Generator

    kwargs = {**_TINY, "conv_clamp": 256 if precision == "fp16" else None}
    G, D = Generator(**kwargs).to(device), Discriminator(**kwargs).to(device)
    z = torch.randn(batch, G.z_dim, device=device)
    c = torch.zeros(batch, 0, device=device)
    start = time.perf_counter()
    with fp32_math(precision == "tf32"), _autocast(precision, device):
        img = G(z, c)
        logits = D(img, c)
    # Non-saturating generator loss softplus(-D(G(z))) (Goodfellow et al. 2014, sec. 3), as StyleGAN2 trains G.
    loss = torch.nn.functional.softplus(-logits.float()).mean()
    loss.backward()
    _sync(device)
    grads = [p.grad for net in (G, D) for p in net.parameters() if p.grad is not None]
    return {
        "image_shape": list(img.shape),
        "loss": float(loss.detach()),
        "grad_norm": math.sqrt(sum(float(g.float().pow(2).sum()) for g in grads)),
        "grads_finite": all(bool(torch.isfinite(g).all()) for g in grads),
        "parameters_with_grad": len(grads),
        "seconds": time.perf_counter() - start,
    }


def stylegan_check(device: torch.device, precision: str) -> r.Check:
    cid, title = "functional.stylegan2", "tiny StyleGAN2 fwd+bwd"
    step = tiny_step(device, precision)
    where = f"{precision} on {device}"
    expected = [4, _TINY["img_channels"], _TINY["resolution"], _TINY["resolution"]]
    healthy = step["image_shape"] == expected and math.isfinite(step["loss"]) and step["grads_finite"]
    if not healthy or step["grad_norm"] == 0:
        return r.failure(
            cid,
            SECTION,
            title,
            f"{where}: image {step['image_shape']}, loss {step['loss']}, grad norm {step['grad_norm']}",
            "try --precision fp32; if that fails too, report it with this output",
            **step,
        )
    value = f"{where}: loss {step['loss']:.3f}, grad norm {step['grad_norm']:.3g}, {step['seconds'] * 1e3:.0f} ms"
    return r.ok(cid, SECTION, title, value, **step)


def _all_reduce_measure(rank: int, world: int, backend: str, port: int, numel: int, iters: int, timeout: float):
    delta = datetime.timedelta(seconds=timeout)
    store = tdist.TCPStore(HOST, port, world, is_master=False, timeout=delta)
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    tdist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=delta)
    try:
        x = torch.full((numel,), float(rank + 1), device=device)
        tdist.all_reduce(x)
        correct = bool((x == world * (world + 1) / 2).all())
        _sync(device)
        # A fixed number of calls on every rank: a collective that one rank skips would hang the others.
        start = time.perf_counter()
        for _ in range(iters):
            tdist.all_reduce(x)
        _sync(device)
        return {"rank": rank, "correct": correct, "seconds": (time.perf_counter() - start) / iters}
    finally:
        tdist.destroy_process_group()


def _all_reduce_worker(rank: int, world: int, backend: str, port: int, numel: int, iters: int, timeout: float, out):
    """Entry point of one spawned process; its result or its error goes back to the parent through `out`."""
    try:
        out.put(_all_reduce_measure(rank, world, backend, port, numel, iters, timeout))
    except Exception as error:  # noqa: BLE001 -- sent to the parent, which reports it as a failure line
        out.put({"rank": rank, "error": f"{type(error).__name__}: {error}"})


def run_all_reduce(backend: str, world: int, nbytes: int, iters: int, timeout: float) -> list[dict]:
    """Spawn `world` local processes that all-reduce `nbytes` of fp32 over `backend`; one result dict per rank.

    The rendezvous store lives in this process on a port the OS picks, so there is no port race; every wait is
    bounded by `timeout`, and the processes are killed if they outlive it.
    """
    context = torch.multiprocessing.get_context("spawn")
    delta = datetime.timedelta(seconds=timeout)
    store = tdist.TCPStore(HOST, 0, None, is_master=True, wait_for_workers=False, timeout=delta)
    out = context.Queue()
    args = (world, backend, store.port, nbytes // 4, iters, timeout, out)
    processes = [context.Process(target=_all_reduce_worker, args=(rank, *args), daemon=True) for rank in range(world)]
    for process in processes:
        process.start()
    try:
        return _collect(out, processes, world, time.monotonic() + timeout, backend)
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()


def _collect(out, processes, world: int, deadline: float, backend: str) -> list[dict]:
    results = []
    while len(results) < world:
        try:
            results.append(out.get(timeout=0.2))
        except queue_lib.Empty:
            if any(p.exitcode not in (None, 0) for p in processes) and out.empty():
                codes = [p.exitcode for p in processes]
                raise RuntimeError(f"a {backend} worker process died (exit codes {codes})") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"{backend} all-reduce did not finish in time") from None
    errors = [result["error"] for result in results if "error" in result]
    if errors:
        raise RuntimeError("; ".join(sorted(set(errors))))
    return results


def bus_bandwidth(nbytes: int, seconds: float, world: int) -> float:
    """All-reduce bus bandwidth in GB/s: algorithm bandwidth times 2(n-1)/n, the traffic each link carries
    (nccl-tests, doc/PERFORMANCE.md), so figures compare across process counts."""
    return nbytes / seconds * 2 * (world - 1) / world / 1e9


def all_reduce_check(backend: str, world: int, quick: bool, timeout: float = 60.0) -> r.Check:
    cid, title = f"functional.{backend}_all_reduce", f"{backend} all-reduce"
    megabytes = {"gloo": 4, "nccl": 64}[backend] * (1 if quick else 4)
    nbytes = megabytes * 2**20
    results = run_all_reduce(backend, world, nbytes, 5 if quick else 20, timeout)
    seconds = max(result["seconds"] for result in results)
    busbw = bus_bandwidth(nbytes, seconds, world)
    data = {"processes": world, "bytes": nbytes, "seconds": seconds, "bus_bandwidth_gbs": busbw}
    value = f"{world} processes, {megabytes} MiB: {seconds * 1e3:.2f} ms, bus bandwidth {busbw:.2f} GB/s"
    if not all(result["correct"] for result in results):
        return r.failure(cid, SECTION, title, f"wrong sum; {value}", "check NCCL_* / GLOO_* environment variables")
    if backend == "nccl" and busbw < SLOW_BUS_GBS:
        return r.warning(
            cid, SECTION, title, value, "check `nvidia-smi topo -m` and NCCL_P2P_DISABLE / NCCL_SHM_DISABLE", **data
        )
    return r.ok(cid, SECTION, title, value, **data)


def functional_checks(gpus: list[GpuProps], precision: str, quick: bool, auto_reason: str = "") -> list[r.Check]:
    """The precision verdict, the tiny StyleGAN2 step, and an all-reduce (NCCL across >= 2 GPUs, gloo otherwise).
    `auto_reason`: why --precision auto chose `precision`, added to the verdict."""
    verdict = precision_check(precision, gpus)
    if auto_reason:
        verdict = dataclasses.replace(verdict, value=f"{verdict.value} (auto: {auto_reason})")
    checks = [verdict]
    device = torch.device("cuda", gpus[0].index) if gpus else torch.device("cpu")
    if verdict.status == r.FAILURE:
        checks.append(r.skipped("functional.stylegan2", SECTION, "tiny StyleGAN2 fwd+bwd", verdict.value))
    else:
        fix = "try --precision fp32; if that fails too, report it with this output"
        checks += r.guarded(
            "functional.stylegan2", SECTION, "tiny StyleGAN2 fwd+bwd", fix, lambda: [stylegan_check(device, precision)]
        )
    return checks + _distributed_checks(gpus, quick)


def _distributed_checks(gpus: list[GpuProps], quick: bool) -> list[r.Check]:
    fix = "check that 127.0.0.1 is reachable and no firewall blocks local ports; see the error above"
    if len(gpus) >= 2:
        nccl = r.guarded(
            "functional.nccl_all_reduce",
            SECTION,
            "nccl all-reduce",
            fix,
            lambda: [all_reduce_check("nccl", len(gpus), quick)],
        )
        return [r.skipped("functional.gloo_all_reduce", SECTION, "gloo all-reduce", "NCCL is checked instead"), *nccl]
    why = "needs two or more GPUs" if tdist.is_nccl_available() else "torch is built without NCCL"
    gloo = r.guarded(
        "functional.gloo_all_reduce", SECTION, "gloo all-reduce", fix, lambda: [all_reduce_check("gloo", 2, quick)]
    )
    return [*gloo, r.skipped("functional.nccl_all_reduce", SECTION, "nccl all-reduce", why)]
