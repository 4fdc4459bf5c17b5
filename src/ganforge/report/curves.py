"""Which curves the report plots, taken from the runs' `stats.jsonl` and metric results, all over kimg.

Long runs have thousands of ticks; every curve is reduced to at most MAX_POINTS points by averaging consecutive
ticks, so the page stays small and the plot shows the trend rather than per-tick noise. A metric's results are one
curve per value and per number of images they were computed on (labelled with it), and a table while every such
curve has a single result.
"""

import math
import warnings
from dataclasses import dataclass

from ganforge.report import hardware
from ganforge.report.protocols import Protocol, protocol
from ganforge.report.rundata import Run, number
from ganforge.stat_names import (
    AUG_P,
    AUG_RT,
    DATA_WAIT_SHARE,
    GRAD_NORM,
    IMG_PER_S,
    LOSS_D,
    LOSS_D_OVER_G,
    LOSS_D_R1,
    LOSS_G,
    LOSS_G_PL,
    LR,
    SCORES_FAKE,
    SCORES_FAKE_D,
    SCORES_REAL,
)

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
        {LOSS_G: "G main", LOSS_D: "D main", LOSS_G_PL: "G path length", LOSS_D_R1: "D R1"},
        False,
    ),
    (
        "D outputs (logits)",
        {SCORES_REAL: "D(real)", SCORES_FAKE: "D(fake), G step", SCORES_FAKE_D: "D(fake), D step"},
        False,
    ),
)
_LATER = (
    ("Speed (img/s)", {IMG_PER_S: "img/s"}, False),
    ("Data wait (share of tick time)", {DATA_WAIT_SHARE: "data wait"}, False),
)
# p, and the overfitting heuristic r_t = E[sign(D(real))] that ADA steers toward its target (Karras et al. 2020)
ADA = ("Adaptive augmentation", {AUG_P: "p", AUG_RT: "r_t"})


@dataclass(frozen=True)
class Curve:
    label: str
    kimg: list[float]
    values: list[float]
    reduced: bool = False  # metric values not on their metric's full protocol: drawn with hollow markers


@dataclass(frozen=True)
class Plot:
    """One figure: curves of every run (run label, curve), a log y axis or not."""

    title: str
    curves: list[tuple[str, Curve]]
    log_y: bool = False
    unit: str = ""  # the y axis label
    levels: tuple[tuple[str, float], ...] = ()  # horizontal lines (legend label, y): ADA's target
    notes: tuple[str, ...] = ()  # under the figure and in its tooltip: the images behind each metric curve


@dataclass(frozen=True)
class ResultTable:
    """A metric with one result per curve, shown as a table: (run label, result, kimg, value, images) per row."""

    title: str
    rows: list[tuple[str, str, str, str, str]]


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
    if any(LOSS_D_OVER_G in r for r in stats):
        return stats_curve(stats, LOSS_D_OVER_G, "D/G")
    ratios = [
        r | {"ratio": r[LOSS_D] / r[LOSS_G]}
        for r in stats
        if _finite(r.get(LOSS_D)) and _finite(r.get(LOSS_G)) and r[LOSS_G] != 0
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


def _metric_series(run: Run, name: str) -> dict[tuple[str, Protocol], list[tuple[float, float]]]:
    """(result key, protocol) -> [(kimg, value)] in kimg order: one series per value and per number of images, so
    that results on different protocols are never joined into one curve."""
    series: dict[tuple[str, Protocol], list[tuple[float, float]]] = {}
    for record in run.metrics.get(name, []):
        if record.get("kimg") is None:
            continue
        used = protocol(name, record)
        for key, value in record["results"].items():
            series.setdefault((key, used), []).append((record["kimg"], value))
    keys = _capped(list(series), f"results of metric {name}")
    return {key: sorted(series[key]) for key in keys}


def metric_figure(runs: list[Run], name: str) -> Plot | ResultTable | None:
    """The results of metric `name` over kimg, each labelled with its images; a table while every series has a
    single result (a figure of one point per line tells nothing a table does not)."""
    found = [
        (run.label, key, used, points) for run in runs for (key, used), points in _metric_series(run, name).items()
    ]
    if not found:
        return None
    title = f"Metric {name}"
    if max(len(points) for *_, points in found) < 2:
        rows = [(run, key, f"{x:g}", f"{y:.4g}", used.text) for run, key, used, points in found for x, y in points]
        return ResultTable(title, rows)
    curves = [
        (run, Curve(f"{key} ({used.short})", *downsample(*zip(*points, strict=True)), reduced=not used.full))
        for run, key, used, points in found
    ]
    several = len(runs) > 1
    notes = dict.fromkeys(f"{f'{run}: ' if several else ''}{key}: {used.text}" for run, key, used, _ in found)
    return Plot(title, curves, notes=tuple(notes))


def ada_levels(runs: list[Run]) -> tuple[tuple[str, float], ...]:
    """ADA's target for r_t (`augment.target` of each run that adapts p), one line per distinct target."""
    targets = {}
    for run in runs:
        augment = (run.config or {}).get("augment")
        target = number(augment.get("target")) if isinstance(augment, dict) and augment.get("mode") == "ada" else None
        if target is not None and 0 < target < 1:
            targets[run.label] = target
    if len(set(targets.values())) == 1:
        (target,) = set(targets.values())
        return ((f"r_t target {target:g}", target),)
    return tuple((f"{label}: r_t target {target:g}", target) for label, target in targets.items())


def _from_keys(runs: list[Run], title: str, keys_of, **style) -> Plot:
    """A figure of the stats keys `keys_of(run)` ({key: legend label}) of every run."""
    curves = [
        (run.label, curve)
        for run in runs
        for key, label in keys_of(run).items()
        if (curve := stats_curve(run.stats, key, label)) is not None
    ]
    return Plot(title, curves, **style)


def plots(runs: list[Run]) -> list[Plot | ResultTable]:
    """Every figure (or table of single results) with data in at least one run, in reading order: losses, D outputs,
    D/G, gradient norms, learning rates, metrics, speed, data wait, peak memory, ADA, telemetry."""

    def each(keys: dict[str, str]):
        return lambda run: keys

    all_stats = [r for run in runs for r in run.stats]
    everything = [_from_keys(runs, title, each(keys), log_y=log_y) for title, keys, log_y in _FIXED]
    everything.append(Plot("D/G loss ratio", [(run.label, c) for run in runs if (c := ratio_curve(run.stats))]))
    everything.append(_from_keys(runs, "Gradient norms", each(_keyed(all_stats, GRAD_NORM)), log_y=True))
    everything.append(_from_keys(runs, "Learning rates", each(_keyed(all_stats, LR))))
    everything += [metric_figure(runs, name) for name in sorted({name for run in runs for name in run.metrics})]
    everything += [_from_keys(runs, title, each(keys), log_y=log_y) for title, keys, log_y in _LATER]
    everything.append(_from_keys(runs, "Peak memory (GB)", hardware.memory_keys, unit="GB"))
    everything.append(_from_keys(runs, ADA[0], each(ADA[1]), levels=ada_levels(runs)))
    groups = hardware.telemetry_groups({key for record in all_stats for key in record}, MAX_CURVES)
    for (kind, signal), keys in list(groups.items())[:MAX_PLOTS]:
        title, unit = hardware.title(kind, signal)
        everything.append(_from_keys(runs, title, each(keys), unit=unit))
    drawn = [p for p in everything if isinstance(p, ResultTable) or (p is not None and p.curves)]
    if len(drawn) > MAX_PLOTS:
        warnings.warn(
            f"report: {len(drawn)} figures, more than a run has; the first {MAX_PLOTS} are drawn", stacklevel=2
        )
    return drawn[:MAX_PLOTS]
