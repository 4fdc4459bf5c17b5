"""What a sweep optimises: one value of one `--metrics` metric, read from the `metric-<name>.jsonl` file that
`ganforge train` appends to at every snapshot, and which way is better."""

import json
import math
from pathlib import Path

from ganforge.errors import UserError
from ganforge.metric_names import METRIC_NAMES

# Metrics where a higher value is better (Inception Score; equivariance in dB of PSNR); every other one a sweep may
# optimise is a distance (FID, KID, SWD, PPL), lower is better. Precision/recall gives two values: no single goal.
HIGHER_IS_BETTER = ("is50k", "eqt50k_int", "eqt50k_frac", "eqr50k")
TWO_VALUES = ("pr50k3_full",)


def metric_problem(name: str) -> str | None:
    """Why `--metric name` cannot steer a sweep, or None."""
    if name not in METRIC_NAMES:
        return f"--metric {name!r:.40}: unknown; use one of {', '.join(n for n in METRIC_NAMES if n not in TWO_VALUES)}"
    if name in TWO_VALUES:
        return f"--metric {name}: gives two values (precision and recall), not one to optimise; use kid50k_full"
    return None


def direction(name: str) -> str:
    """Optuna's direction for metric `name`."""
    return "maximize" if name in HIGHER_IS_BETTER else "minimize"


def value_of(record: dict, name: str) -> float:
    """The number a metric record gives for `name` (SWD's average over its resolutions)."""
    results = record.get("results") or {}
    value = results.get(name, results.get(f"{name}_avg"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def measurements(run_dir: Path | None, name: str) -> list[tuple[int, float]]:
    """(images trained, value) of each measurement the run has made so far, in order; a line still being written
    (the file is appended to while training runs) is left for the next read."""
    path = None if run_dir is None else run_dir / f"metric-{name}.jsonl"
    if path is None or not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
            nimg = round(float(_kimg_of(record)) * 1000)
        except (ValueError, TypeError):
            continue
        found.append((nimg, value_of(record, name)))
    return found


def _kimg_of(record: dict) -> str:
    """A record's kimg, from its snapshot's name (network-snapshot-<kimg>.safetensors)."""
    snapshot = Path(str(record.get("snapshot")))
    return snapshot.stem.removeprefix("network-snapshot-")


def check_metric(name: str) -> None:
    if (problem := metric_problem(name)) is not None:
        raise UserError(problem)
