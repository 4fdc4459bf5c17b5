"""The report's facts and tables of one run: the summary line, best metrics, the resolved config and what was
derived, the environment, alerts and skipped steps, checkpoints and snapshots."""

import dataclasses

from ganforge.config import Config, flatten
from ganforge.config.describe import describe_derived
from ganforge.report.rundata import Run

HIGHER_IS_BETTER = ("precision", "recall", "eqt", "eqr")  # PR and the equivariance PSNRs; FID, KID, SWD: lower


def duration(seconds: float) -> str:
    s = round(seconds)
    days = f"{s // 86400}d " if s >= 86400 else ""
    return f"{days}{s // 3600 % 24}:{s // 60 % 60:02d}:{s % 60:02d}"


def best_metrics(run: Run) -> list[tuple[str, float, float | None]]:
    """(result key, best value, kimg of its snapshot) for every metric value the run recorded."""
    best = {}
    for records in run.metrics.values():
        for record in records:
            for key, value in (record.get("results") or {}).items():
                higher = any(word in key for word in HIGHER_IS_BETTER)
                old = best.get(key)
                if old is None or (value > old[0] if higher else value < old[0]):
                    best[key] = (value, record.get("kimg"))
    return [(key, value, kimg) for key, (value, kimg) in sorted(best.items())]


def summary(run: Run) -> dict[str, str]:
    """The header facts: status, dataset, preset, progress, speed, ETA, best metrics."""
    cfg = run.config or {}
    last = run.stats[-1] if run.stats else {}
    done, total = last.get("kimg", 0.0), cfg.get("schedule", {}).get("kimg")
    rate = last.get("Timing/img_per_s")
    eta = "-"
    if run.status.state == "running" and rate and total is not None:
        eta = duration((total - done) * 1000 / rate)
    data = cfg.get("data", {})
    best = [
        f"{key} {value:.4g} at {'?' if kimg is None else f'{kimg:g}'} kimg" for key, value, kimg in best_metrics(run)
    ]
    return {
        "status": run.status.state,
        "dataset": f"{data.get('name', '?')} ({data.get('resolution', '?')} px, {data.get('channels', '?')} ch)",
        "preset": str(cfg.get("preset", "?")),
        "kimg": f"{done:g} / {'?' if total is None else f'{total:g}'}",
        "img/s": "-" if rate is None else f"{rate:.1f}",
        "ETA": eta,
        "best": "; ".join(best) or "-",
    }


def _value(value) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None else str(value)


def config_rows(run: Run) -> list[tuple[str, str]]:
    return [(key, _value(value)) for key, value in sorted(flatten(run.config or {}).items())]


def derived_lines(run: Run) -> list[str]:
    """What the preset and flags implied (as printed at start), when config.json has this version's layout."""
    config, kinds = run.config or {}, {f.name: f.type for f in dataclasses.fields(Config)}
    if set(config) != set(kinds):
        return []
    for name, kind in kinds.items():
        if dataclasses.is_dataclass(kind) and set(config[name]) != {f.name for f in dataclasses.fields(kind)}:
            return []
    return describe_derived(Config.from_dict(config))


def env_rows(run: Run) -> list[tuple[str, str]]:
    return [(key, _value(value)) for key, value in sorted(flatten(run.env or {}).items())]


def alerts(run: Run) -> list[tuple[str, str]]:
    """(kimg, message): alerts recorded per tick in stats.jsonl, then warning lines of log.txt."""
    out = []
    for record in run.stats:
        found = record.get("alerts") or []
        kimg = record.get("kimg")
        for alert in [found] if isinstance(found, (str, dict)) else found:
            out.append(("?" if kimg is None else f"{kimg:g}", _value(alert)))
    return out + [("", line) for line in run.log if line.startswith("warning:")]


def skipped_steps(run: Run) -> list[tuple[str, str, str]]:
    """(kimg, phase, steps skipped in that tick) for every tick with non-finite steps skipped."""
    return [(f"{record['kimg']:g}", key.removeprefix("Skipped/"), f"{value:g}") for record in run.stats
            for key, value in sorted(record.items()) if key.startswith("Skipped/") and value]  # fmt: skip


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
