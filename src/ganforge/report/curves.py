"""Which curves the report plots, taken from the runs' `stats.jsonl` and metric results, all over kimg.

Long runs have thousands of ticks; every curve is reduced to at most MAX_POINTS points by averaging consecutive
ticks, so the page stays small and the plot shows the trend rather than per-tick noise.
"""

import math
import re
import warnings
from dataclasses import dataclass

from ganforge.report.rundata import Run

MAX_POINTS = 400
# A run has ~30 figures (losses, norms, rates, 7 metrics, speed, ~8 telemetry signals) of at most a few hundred
# curves (3 per GPU of a 64-GPU job); a stats file with more distinct keys was not written by train, and each figure
# costs a fraction of a second to draw.
MAX_PLOTS = 64
MAX_CURVES = 256

# (title, {stats key: legend label}, logarithmic y axis)
_FIXED = (
    (
        "Losses",
        {"Loss/G/main": "G main", "Loss/D/main": "D main", "Loss/G/pl": "G path length", "Loss/D/r1": "D R1"},
        False,
    ),
    (
        "D outputs (logits)",
        {"Scores/real": "D(real)", "Scores/fake": "D(fake), G step", "Scores/fake_D": "D(fake), D step"},
        False,
    ),
)
_LATER = (
    ("Speed (img/s)", {"Timing/img_per_s": "img/s"}, False),
    ("Data wait (share of tick time)", {"Timing/data_wait_share": "data wait"}, False),
    ("Peak memory (GB)", {"Memory/peak_gb": "peak memory"}, False),
    ("Adaptive augmentation", {"Aug/p": "p", "Aug/rt": "r_t (target line)"}, False),
)
# node<n>/ on several nodes; a signal's tick mean, or its /min and /max drawn beside it in the same figure
_TELEMETRY = re.compile(r"^((?:node\d+/)?(?:GPU\d+|CPU))/(.+?)(?:/(min|max))?$")


@dataclass(frozen=True)
class Curve:
    label: str
    kimg: list[float]
    values: list[float]


@dataclass(frozen=True)
class Plot:
    """One figure: curves of every run (run label, curve), a log y axis or not."""

    title: str
    curves: list[tuple[str, Curve]]
    log_y: bool = False


def downsample(xs: list[float], ys: list[float], max_points: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """At most `max_points` points: means of runs of ceil(n / max_points) consecutive points."""
    size = math.ceil(len(xs) / max_points) if xs else 1
    if size <= 1:
        return list(xs), list(ys)
    chunks = range(0, len(xs), size)
    return [sum(xs[i : i + size]) / len(xs[i : i + size]) for i in chunks], [
        sum(ys[i : i + size]) / len(ys[i : i + size]) for i in chunks
    ]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def stats_curve(stats: list[dict], key: str, label: str) -> Curve | None:
    points = [(r["kimg"], r[key]) for r in stats if _finite(r.get(key)) and _finite(r.get("kimg"))]
    if not points:
        return None
    return Curve(label, *downsample([x for x, _ in points], [y for _, y in points]))


def ratio_curve(stats: list[dict]) -> Curve | None:
    """D loss / G loss per tick: the recorded `Loss/D_over_G`, else computed from the two main losses."""
    if any("Loss/D_over_G" in r for r in stats):
        return stats_curve(stats, "Loss/D_over_G", "D/G")
    ratios = [
        r | {"ratio": r["Loss/D/main"] / r["Loss/G/main"]}
        for r in stats
        if _finite(r.get("Loss/D/main")) and _finite(r.get("Loss/G/main")) and r["Loss/G/main"] != 0
    ]
    return stats_curve(ratios, "ratio", "D/G")


def _capped(keys: list, what: str) -> list:
    if len(keys) > MAX_CURVES:
        warnings.warn(
            f"report: {len(keys)} {what}, more than a run records; the first {MAX_CURVES} are drawn", stacklevel=3
        )
    return keys[:MAX_CURVES]


def _keyed(stats: list[dict], prefix: str) -> dict[str, str]:
    keys = _capped(sorted({k for r in stats for k in r if k.startswith(prefix)}), f"{prefix} curves")
    return {k: k.removeprefix(prefix) for k in keys}


def _telemetry(stats: list[dict]) -> dict[str, dict[str, str]]:
    """Telemetry signals grouped by what they measure, each with its range:
    {"util": {"GPU0/util": "GPU0", "GPU0/util/max": "GPU0 max", ...}, ...}."""
    groups: dict[str, dict[str, str]] = {}
    for key in sorted({k for r in stats for k in r}):
        if match := _TELEMETRY.match(key):
            device, signal, bound = match.groups()
            if len(groups.get(signal, ())) < MAX_CURVES:
                groups.setdefault(signal, {})[key] = f"{device} {bound}" if bound else device
    return groups


def _metric_curves(run: Run) -> dict[str, list[Curve]]:
    """Per metric, one curve per result value (FID; precision and recall; SWD per level and average)."""
    out = {}
    for name, records in run.metrics.items():
        dated = [r for r in records if r.get("kimg") is not None and isinstance(r.get("results"), dict)]
        keys = _capped(sorted({k for r in dated for k in r["results"]}), f"results of metric {name}")
        curves = [stats_curve([{"kimg": r["kimg"], **r["results"]} for r in dated], key, key) for key in keys]
        out[name] = [c for c in curves if c is not None]
    return out


def _stats_specs(runs: list[Run], table) -> list[tuple[str, dict, bool]]:
    return [
        (title, {key: label for key, label in keys.items() if any(key in r for run in runs for r in run.stats)}, log_y)
        for title, keys, log_y in table
    ]


def plots(runs: list[Run]) -> list[Plot]:
    """Every figure with data in at least one run, in reading order: losses, D outputs, D/G, gradient norms,
    learning rates, metrics, speed, data wait, memory, ADA, telemetry."""

    def from_keys(title: str, keys: dict[str, str], log_y: bool = False) -> Plot:
        curves = [
            (run.label, c)
            for run in runs
            for key, label in keys.items()
            if (c := stats_curve(run.stats, key, label)) is not None
        ]
        return Plot(title, curves, log_y)

    everything = [from_keys(*spec) for spec in _stats_specs(runs, _FIXED)]
    everything.append(Plot("D/G loss ratio", [(run.label, c) for run in runs if (c := ratio_curve(run.stats))]))
    all_stats = [r for run in runs for r in run.stats]
    everything.append(from_keys("Gradient norms", _keyed(all_stats, "GradNorm/"), log_y=True))
    everything.append(from_keys("Learning rates", _keyed(all_stats, "LR/")))
    metric_curves = [(run.label, _metric_curves(run)) for run in runs]
    for name in sorted({name for _, curves in metric_curves for name in curves}):
        everything.append(
            Plot(f"Metric {name}", [(run, c) for run, curves in metric_curves for c in curves.get(name, [])])
        )
    everything += [from_keys(*spec) for spec in _stats_specs(runs, _LATER)]
    for signal, keys in list(_telemetry(all_stats).items())[:MAX_PLOTS]:
        everything.append(from_keys(f"Telemetry: {signal}", keys))
    drawn = [p for p in everything if p.curves]
    if len(drawn) > MAX_PLOTS:
        warnings.warn(
            f"report: {len(drawn)} figures, more than a run has; the first {MAX_PLOTS} are drawn", stacklevel=2
        )
    return drawn[:MAX_PLOTS]
