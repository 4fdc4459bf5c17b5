"""The report's facts and tables of one run: the summary line, best metrics, the resolved config and what was
derived, the environment, alerts and skipped steps, checkpoints and snapshots.

config.json and env.json come from the run folder as any JSON (rundata bounds their size and depth): every value is
looked up with its type checked, and shown cut to MAX_CELL_CHARS."""

import dataclasses
import types
import typing

from ganforge.config import Config, flatten
from ganforge.config.describe import describe_derived
from ganforge.durable import shorten
from ganforge.report.protocols import Protocol, protocol
from ganforge.report.rundata import Run, number
from ganforge.stat_names import IMG_PER_S, SKIPPED

MAX_CELL_CHARS = 1000
MAX_ETA_S = 10 * 365 * 86400  # an ETA beyond ten years is no estimate
MAX_BEST_LINES = 40  # best values in the summary: ganforge's metrics have at most 25 result keys (SWD: a level each)

# PR, the equivariance PSNRs and the Inception Score; FID, KID, SWD, PPL (and the spread of IS over its splits): lower
HIGHER_IS_BETTER = ("precision", "recall", "eqt", "eqr", "is50k_mean")


def duration(seconds: float) -> str:
    s = round(seconds)
    days = f"{s // 86400}d " if s >= 86400 else ""
    return f"{days}{s // 3600 % 24}:{s // 60 % 60:02d}:{s % 60:02d}"


def best_metrics(run: Run) -> list[tuple[str, float, float | None, Protocol]]:
    """(result key, best value, kimg of its snapshot, its protocol) for every metric value the run recorded. Values
    on different numbers of images do not compare (FID grows as they shrink), so the best is taken among the results
    on the full protocol, or where there are none, among those on the most images."""
    found: dict[str, list[tuple[float, float | None, Protocol]]] = {}
    for name, records in run.metrics.items():
        for record in records:
            used = protocol(name, record)
            for key, value in record["results"].items():
                found.setdefault(key, []).append((value, record["kimg"], used))
    best = []
    for key, results in sorted(found.items()):
        top = max(_rank(used) for _, _, used in results)
        comparable = [result for result in results if _rank(result[2]) == top]
        higher = any(word in key for word in HIGHER_IS_BETTER)
        value, kimg, used = (max if higher else min)(comparable, key=lambda result: result[0])
        best.append((key, value, kimg, used))
    return best


def _rank(used: Protocol) -> tuple[bool, int, int]:
    """Results of equal rank compare: every one on the full protocol, else those on as many fakes and reals."""
    return (True, 0, 0) if used.full else (False, used.fakes or 0, used.reals or 0)


def best_lines(run: Run) -> list[tuple[str, bool]]:
    """The summary's best values, each with its images and whether they are the full protocol:
    ('kid50k_full 0.0123 at 12 kimg (256 fakes / 512 reals, not the full protocol of 50k fakes / all reals)', False)."""
    best = best_metrics(run)
    lines = []
    for key, value, kimg, used in best[:MAX_BEST_LINES]:
        where = "?" if kimg is None else f"{kimg:g}"
        lines.append((shorten(f"{key} {value:.4g} at {where} kimg ({used.text})", MAX_CELL_CHARS), used.full))
    if len(best) > MAX_BEST_LINES:
        lines.append((f"and {len(best) - MAX_BEST_LINES} more results", True))
    return lines


def _section(cfg: dict, name: str) -> dict:
    value = cfg.get(name)
    return value if isinstance(value, dict) else {}


def _eta(run: Run, done: float, total: float | None, rate: float | None) -> str:
    if run.status.state != "running" or not rate or total is None:
        return "-"
    seconds = (total - done) * 1000 / rate
    return duration(seconds) if 0 <= seconds <= MAX_ETA_S else "-"


def summary(run: Run) -> dict[str, str]:
    """The header facts: status, dataset, preset, progress, speed, ETA (the best metrics: best_lines)."""
    cfg = run.config or {}
    last = run.stats[-1] if run.stats else {}
    done, total = last.get("kimg", 0.0), number(_section(cfg, "schedule").get("kimg"))
    rate = last.get(IMG_PER_S)
    data = _section(cfg, "data")
    name, resolution, channels = (shorten(data.get(k, "?"), 100) for k in ("name", "resolution", "channels"))
    return {
        "status": run.status.state,
        "dataset": f"{name} ({resolution} px, {channels} ch)",
        "preset": shorten(cfg.get("preset", "?"), 100),
        "kimg": f"{done:g} / {'?' if total is None else f'{total:g}'}",
        "img/s": "-" if rate is None else f"{rate:.1f}",
        "ETA": _eta(run, done, total, rate),
    }


def _value(value) -> str:
    if isinstance(value, list):
        return shorten(", ".join(map(str, value)), MAX_CELL_CHARS) or "-"
    return "-" if value is None else shorten(value, MAX_CELL_CHARS)


def config_rows(run: Run) -> list[tuple[str, str]]:
    return [(shorten(key), _value(value)) for key, value in sorted(flatten(run.config or {}).items())]


def _fits(value, kind) -> bool:
    """Does a JSON value have the type a Config field declares (int, float, str, bool, X | None, tuple[X, ...])?"""
    if isinstance(kind, types.UnionType):
        return any(_fits(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if typing.get_origin(kind) is tuple:
        return isinstance(value, list) and all(_fits(v, typing.get_args(kind)[0]) for v in value)
    if kind is bool:
        return isinstance(value, bool)
    if kind in (int, float):
        return number(value) is not None and (kind is float or isinstance(value, int))
    return isinstance(value, kind)


def derived_lines(run: Run) -> list[str]:
    """What the preset and flags implied (as printed at start), when config.json has this version's layout and every
    field the type it declares."""
    config, kinds = run.config or {}, {f.name: f.type for f in dataclasses.fields(Config)}
    if set(config) != set(kinds):
        return []
    for name, kind in kinds.items():
        if not dataclasses.is_dataclass(kind):
            if not _fits(config[name], kind):
                return []
            continue
        fields = {f.name: f.type for f in dataclasses.fields(kind)}
        if not isinstance(config[name], dict) or set(config[name]) != set(fields):
            return []
        if not all(_fits(config[name][field], fields[field]) for field in fields):
            return []
    try:
        return describe_derived(Config.from_dict(config))
    except ArithmeticError:  # well-typed values that no run has (a zero batch per device, a resolution of 0)
        return []


def env_rows(run: Run) -> list[tuple[str, str]]:
    return [(shorten(key), _value(value)) for key, value in sorted(flatten(run.env or {}).items())]


def alerts(run: Run) -> list[tuple[str, str]]:
    """(kimg, message): alerts recorded per tick in stats.jsonl, then warning lines of log.txt."""
    out = []
    for record in run.stats:
        found = record.get("alerts", [])
        out += [(f"{record['kimg']:g}", alert) for alert in ([found] if isinstance(found, str) else found)]
    return out + [("", line) for line in run.log if line.startswith("warning:")]


def skipped_steps(run: Run) -> list[tuple[str, str, str]]:
    """(kimg, phase, steps skipped in that tick) for every tick with non-finite steps skipped."""
    return [
        (f"{record['kimg']:g}", key.removeprefix(SKIPPED), f"{value:g}")
        for record in run.stats
        for key, value in sorted(record.items())
        if key.startswith(SKIPPED) and value
    ]


def size_text(size: int) -> str:
    """1536 -> '1.5 KB'."""
    value, unit = float(size), 0
    while value >= 1024 and unit < 3:
        value, unit = value / 1024, unit + 1
    return f"{size} B" if unit == 0 else f"{value:.1f} {('KB', 'MB', 'GB')[unit - 1]}"


def file_rows(run: Run) -> list[tuple[str, str, str, str]]:
    """(kind, name, kimg, size) of every checkpoint and snapshot."""
    files = [("checkpoint", f) for f in run.checkpoints] + [("snapshot", f) for f in run.snapshots]
    return [(kind, f.name, f"{f.kimg:g}", size_text(f.size)) for kind, f in files]
