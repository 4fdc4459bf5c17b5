"""The bench result as a JSON-ready dict (schema `ganforge.bench/2`, described in docs/bench.md), and as the table
`ganforge bench` prints. Figures are per device unless they say otherwise."""

import platform
from pathlib import Path

import torch

from ganforge.bench.measure import Measurement
from ganforge.bench.options import BenchOptions
from ganforge.bench.peak import DevicePeak
from ganforge.bench.search import SearchResult
from ganforge.bench.shape import DEFAULT, Shape
from ganforge.bench.spread import SPREAD_LIMIT, spread_of, spread_warning
from ganforge.devices import pick_kernels
from ganforge.urls import public_url

SCHEMA = "ganforge.bench/2"


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    names = [line.partition(":")[2].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.machine()


def _phases(m: Measurement) -> dict:
    phases = {}
    for name, interval in m.intervals.items():
        ms = spread_of([repeat[name] for repeat in m.repeats])
        phases[name] = {"ms": ms.median, "ms_min": ms.low, "ms_max": ms.high, "interval": interval}
    return phases


def _spread(m: Measurement, device_type: str) -> dict:
    img_per_s = spread_of(m.repeat_img_per_s)
    return {
        "repeat": len(m.repeats),
        "img_per_s": img_per_s.as_dict(),
        "relative": img_per_s.relative,
        "limit": SPREAD_LIMIT,
        "warning": spread_warning(img_per_s, len(m.repeats), device_type),
    }


def _config(options: BenchOptions, shape: Shape, preset, final: Measurement) -> dict:
    model = preset.model
    return {
        "cfg": options.cfg,
        "resolution": shape.resolution,
        "width": shape.facts().width,  # of non-square data, resolution is the shorter side
        "height": shape.facts().height,
        "channels": shape.channels,
        "cond": options.cond,
        "label_dim": shape.label_dim,
        "sources": shape.sources,
        "channel_base": options.cbase or model.channel_base,
        "channel_max": options.cmax or model.channel_max,
        "g_arch": model.g_arch,
        "d_arch": model.d_arch,
        "g_attn": list(model.g_attn),
        "d_attn": list(model.d_attn),
        "precision": options.precision,
        "fp16_res": preset.precision.fp16_res,
        "compile": preset.runtime.compile,
        "kernels": pick_kernels(preset.runtime.kernels, preset.runtime.device, preset.runtime.compiling)[0],
        "channels_last": options.channels_last,
        "aug": preset.augment.mode,
        "aug_p": options.fixed_p,
        "batch_gpu": final.batch_gpu,
        "batch": final.images_per_step,
        "G_params": final.G_params,
        "D_params": final.D_params,
    }


def _data(options: BenchOptions, shape: Shape) -> dict | None:
    d = shape.dataset
    if d is None:
        return None
    return {
        "path": public_url(options.data),
        "name": d.name,
        "resolution": d.resolution,
        "channels": d.channels,
        "label_dim": d.label_dim,
    }


def _search(found: SearchResult | None, cap: float | None, preset_batch: int) -> dict | None:
    if found is None:
        return None
    candidates = [{"batch_gpu": c.batch_gpu, "img_per_s": c.measurement and c.measurement.img_per_s,
                   "memory_gb": c.measurement and c.measurement.memory_gb, "out_of_memory": c.out_of_memory}
                  for c in found.candidates]  # fmt: skip
    return {"candidates": candidates, "largest_fit": found.largest_fit, "fastest": found.fastest,
            "recommended": found.recommended, "limit": found.limit, "memory_cap_gb": cap,
            "preset_batch": preset_batch}  # fmt: skip


def result(
    options: BenchOptions,
    shape: Shape,
    preset,
    device: torch.device,
    peak: DevicePeak,
    measurements: tuple[Measurement, Measurement | None],
    found: SearchResult | None,
    cap: float | None,
) -> dict:
    """The result dict; `preset` is the resolved Config of the options at the preset's batch; `measurements` the one
    on this device alone and the one of all ranks together (None on one device)."""
    single, together = measurements
    final = together or single
    memory = {"peak_gb": final.peak_memory_gb, "estimate_gb": final.memory_estimate_gb, "gb": final.memory_gb,
              "source": "estimate" if final.peak_memory_gb is None else "CUDA allocator peak"}  # fmt: skip
    scaling = None
    if together is not None:
        efficiency = together.img_per_s / (together.world_size * single.img_per_s)
        scaling = {"world_size": together.world_size, "one_device_img_per_s": single.img_per_s,
                   "img_per_s": together.img_per_s, "efficiency": efficiency}  # fmt: skip
    fraction = None if peak.tflops is None else final.tflops / peak.tflops
    kimg = preset.schedule.kimg
    return {
        "schema": SCHEMA,
        "device": {"type": device.type, "name": device_name(device), "world_size": final.world_size},
        "config": _config(options, shape, preset, final), "data": _data(options, shape),
        "steps": options.steps, "warmup": options.warmup, "repeat": options.repeat,
        "img_per_s": final.img_per_s, "s_per_kimg": 1000 / final.img_per_s, "spread": _spread(final, device.type),
        "estimate": {"kimg": kimg, "seconds": kimg * 1000 / final.img_per_s},
        "phases": _phases(final), "iteration_ms": final.iteration_ms,
        "flops_per_iteration": final.flops_per_iteration, "tflops": final.tflops,
        "peak": {"tflops": peak.tflops, "source": peak.source, "fraction": fraction},
        "memory": memory, "batch_search": _search(found, cap, preset.schedule.batch), "scaling": scaling,
    }  # fmt: skip


def duration(seconds: float) -> str:
    """H:MM:SS below two days, else days with one decimal."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def flop_rate(tflops: float) -> str:
    return f"{tflops:.3g} TFLOP/s" if tflops >= 1 else f"{tflops * 1000:.3g} GFLOP/s"


def flop_count(flops: float) -> str:
    return f"{flops / 1e12:.3g} TFLOP" if flops >= 1e12 else f"{flops / 1e9:.3g} GFLOP"


def _search_lines(search: dict) -> list[str]:
    lines = ["", f"{'batch/device':>12} {'img/s':>9} {'memory GB':>10}"]
    for c in search["candidates"]:
        if c["out_of_memory"] is not None:
            lines.append(f"{c['batch_gpu']:>12} out of memory: {c['out_of_memory']}")
        else:
            lines.append(f"{c['batch_gpu']:>12} {c['img_per_s']:>9.1f} {c['memory_gb']:>10.2f}")
    limit = "memory" if search["limit"] == "memory" else "--max-batch-gpu"
    lines.append(f"largest that fits: {search['largest_fit']} (limited by {limit}); fastest: {search['fastest']}")
    lines.append(
        f"use --batch-gpu {search['recommended']} (the fastest that divides the preset's batch "
        f"{search['preset_batch']})"
    )
    return lines


_SETTERS = {"resolution": "--resolution or --data", "channels": "--channels or --data"}


def _source_text(key: str, source: str, cfg: str) -> str:
    if source == "--cfg":
        return f"from --cfg {cfg}"
    return f"by default ({_SETTERS[key]} sets it)" if source == DEFAULT else f"from {source}"


def _images_line(r: dict) -> str:
    """Where the resolution and channels timed came from, defaults named as such with the flags that set them."""
    c, data = r["config"], r["data"]
    parts = [f"{key} {c[key]} {_source_text(key, c['sources'][key], c['cfg'])}" for key in ("resolution", "channels")]
    if c["cond"]:
        labels = f"conditional on {c['label_dim']} labels"
    elif data is not None and data["label_dim"]:
        labels = f"unconditional (--data has {data['label_dim']} labels: --cond times the conditional step)"
    else:
        labels = "unconditional"
    of = "" if data is None else f" like {data['name']}"
    return f"images   {c['width']}x{c['height']}x{c['channels']}{of}: {', '.join(parts)}; {labels}"


def _speed_line(r: dict) -> str:
    s = r["spread"]
    if s["repeat"] == 1:
        spread = "1 repeat, so no spread: --repeat 3 or more measures it"
    else:
        v = s["img_per_s"]
        spread = f"min {v['min']:.1f}, max {v['max']:.1f} over {s['repeat']} repeats: {100 * s['relative']:.0f}% spread"
    return (
        f"speed    {r['img_per_s']:.1f} img/s ({spread}), {r['s_per_kimg']:.1f} s/kimg; the preset's "
        f"{r['estimate']['kimg']:g} kimg would take {duration(r['estimate']['seconds'])}"
    )


def table(r: dict) -> str:
    """The human-readable report of a result dict."""
    c, m, p = r["config"], r["memory"], r["peak"]
    lines = [
        f"ganforge bench: --cfg {c['cfg']} {c['width']}x{c['height']}x{c['channels']}, {c['precision']}, "
        f"{c['kernels']} kernels, "
        f"batch {c['batch_gpu']} per device x {r['device']['world_size']} on {r['device']['type']} "
        f"({r['device']['name']})",
        _images_line(r),
        f"networks: G {c['G_params']:,} parameters, D {c['D_params']:,}; channel base {c['channel_base']}, "
        f"max {c['channel_max']}; per phase the median of {r['steps']} timed calls per repeat, "
        f"{r['repeat']} repeats, after {r['warmup']} untimed",
        "",
        f"{'phase':<10} {'ms/call':>9} {'min':>9} {'max':>9} {'every':>6} {'ms/step':>9}",
    ]
    for name, phase in r["phases"].items():
        per_step = phase["ms"] / phase["interval"]
        lines.append(
            f"{name:<10} {phase['ms']:>9.1f} {phase['ms_min']:>9.1f} {phase['ms_max']:>9.1f} "
            f"{phase['interval']:>6} {per_step:>9.1f}"
        )
    lines.append(f"{'step':<10} {'':>9} {'':>9} {'':>9} {'':>6} {r['iteration_ms']:>9.1f}")
    share = "" if p["fraction"] is None else f" = {100 * p['fraction']:.0f}% of {flop_rate(p['tflops'])}"
    lines += [
        "",
        _speed_line(r),
        f"compute  {flop_count(r['flops_per_iteration'])} per step per device, {flop_rate(r['tflops'])}"
        f"{share} ({p['source']})",
        f"memory   {m['gb']:.2f} GB ({m['source']})",
    ]
    if r["scaling"] is not None:
        s = r["scaling"]
        lines.append(
            f"scaling  {s['img_per_s']:.1f} img/s on {s['world_size']} devices vs {s['world_size']} x "
            f"{s['one_device_img_per_s']:.1f} alone: {100 * s['efficiency']:.0f}% efficiency"
        )
    if r["batch_search"] is not None:
        lines += _search_lines(r["batch_search"])
    return "\n".join(lines)
