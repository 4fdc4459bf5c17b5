"""Quality metrics: FID, KID, precision/recall on the standard TF-FID Inception features, and SWD; and the
equivariance metrics EQ-T, EQ-T_frac, EQ-R of a StyleGAN3 generator (no reals needed).

```python
from ganforge.metrics import compute_metric, METRICS, append_result
result = compute_metric("fid50k_full", generator=G, real="data.zip", device="cuda")
append_result(run_dir / "metric-fid50k_full.jsonl", result, snapshot="snapshots/snapshot-000100.safetensors")
```
"""

import json
import time
from pathlib import Path

from ganforge import dist
from ganforge.durable import append_text
from ganforge.metrics.evaluator import MetricOptions
from ganforge.metrics.registry import (
    METRICS,
    MetricSpec,
    check_names,
    compute_metric,
    compute_metrics,
    parse_names,
)

__all__ = [
    "METRICS",
    "MetricOptions",
    "MetricSpec",
    "append_result",
    "check_names",
    "compute_metric",
    "compute_metrics",
    "parse_names",
]


def append_result(jsonl_path: str | Path, result: dict, snapshot: str | Path | None = None) -> None:
    """Append one JSON line: the result record plus the snapshot it measured and a UTC timestamp (rank 0 only)."""
    if not dist.is_main():
        return
    line = {"snapshot": None if snapshot is None else str(snapshot)} | result
    line["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = Path(jsonl_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    append_text(path, json.dumps(line) + "\n")
