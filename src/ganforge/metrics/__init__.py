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

from ganforge import names_on_first_use
from ganforge.durable import append_text

# The names are loaded on first use: `ganforge --help` imports `ganforge.metrics.options` (and so this file), and must
# not pay for importing torch.
_HOMES = {
    "METRICS": "ganforge.metrics.registry",
    "MetricOptions": "ganforge.metrics.evaluator",
    "MetricSpec": "ganforge.metrics.registry",
    "check_names": "ganforge.metrics.registry",
    "compute_metric": "ganforge.metrics.registry",
    "compute_metrics": "ganforge.metrics.registry",
    "parse_names": "ganforge.metrics.registry",
}

__all__ = [*_HOMES, "append_result"]


__getattr__ = names_on_first_use(__name__, _HOMES)


def append_result(jsonl_path: str | Path, result: dict, snapshot: str | Path | None = None) -> None:
    """Append one JSON line: the result record plus the snapshot it measured and a UTC timestamp (rank 0 only)."""
    from ganforge import dist

    if not dist.is_main():
        return
    line = {"snapshot": None if snapshot is None else str(snapshot)} | result
    line["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = Path(jsonl_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    append_text(path, json.dumps(line) + "\n")
