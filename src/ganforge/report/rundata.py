"""Reading what a run folder holds (written by `ganforge train`), tolerating a run that is still writing.

`config.json`, `env.json` (rundir.py); `log.txt`; `stats.jsonl`, one record per tick (logs.py); `metric-<name>.jsonl`,
one result per line with the snapshot it measured (metrics `append_result`); `reals.png`, `fakes<kimg>.png`;
`snapshots/network-snapshot-<kimg>.safetensors`; `checkpoints/ckpt-<images>/`.
"""

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ganforge.config import upgrade
from ganforge.errors import UserError
from ganforge.report.status import Status, run_status

_KIMG = r"(\d+(?:\.\d+)?)"
_FAKES = re.compile(rf"^fakes{_KIMG}\.png$")
_SNAPSHOT = re.compile(rf"network-snapshot-{_KIMG}\.safetensors$")
_CHECKPOINT = re.compile(r"^ckpt-(\d+)$")
_RUN_NUMBER = re.compile(r"^(\d+)-")


@dataclass(frozen=True)
class StoredFile:
    """A checkpoint folder or a snapshot file: its name, progress and size on disk."""

    name: str
    kimg: float
    size: int


@dataclass(frozen=True)
class Run:
    """Everything the report shows of one run."""

    path: Path
    config: dict | None
    env: dict | None
    stats: list[dict]
    unreadable_stats: int  # lines of stats.jsonl that did not parse (the last one, while it is being written)
    metrics: dict[str, list[dict]]  # metric name -> results, each with "kimg" of its snapshot (None if unknown)
    log: list[str]
    fakes: list[tuple[float, Path]]  # (kimg, file), oldest first
    reals: Path | None
    checkpoints: list[StoredFile]
    snapshots: list[StoredFile]
    status: Status
    heading: str = ""  # how the page names the run: its folder name, or parent/name where two runs share one
    label: str = ""  # how legends name it: its number where every run has its own, else the heading

    @property
    def name(self) -> str:
        return self.path.name


def name_runs(runs: list[Run]) -> list[Run]:
    """The runs with their headings and legend labels set (short labels keep overlaid legends inside the figure)."""
    names = [run.name for run in runs]
    headings = names if len(set(names)) == len(names) else [f"{run.path.parent.name}/{run.name}" for run in runs]
    numbers = [m.group(1) if (m := _RUN_NUMBER.match(name)) else None for name in names]
    short = None not in numbers and len(set(numbers)) == len(numbers)
    return [dataclasses.replace(run, heading=heading, label=number if short else heading)
            for run, heading, number in zip(runs, headings, numbers, strict=True)]  # fmt: skip


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _jsonl(path: Path) -> tuple[list[dict], int]:
    """The records of a JSON-lines file, and how many lines did not parse."""
    if not path.is_file():
        return [], 0
    records, bad = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad += 1
    return records, bad


def snapshot_kimg(snapshot: str | None) -> float | None:
    """12.0 for '.../network-snapshot-000012.safetensors', 0.016 for '...-000000.016...', None when not one."""
    match = _SNAPSHOT.search(snapshot or "")
    return float(match.group(1)) if match else None


def _metrics(run: Path) -> dict[str, list[dict]]:
    out = {}
    for path in sorted(run.glob("metric-*.jsonl")):
        records, _ = _jsonl(path)
        out[path.stem.removeprefix("metric-")] = [r | {"kimg": snapshot_kimg(r.get("snapshot"))} for r in records]
    return out


def _fakes(run: Path) -> list[tuple[float, Path]]:
    found = [(float(m.group(1)), p) for p in run.glob("fakes*.png") if (m := _FAKES.match(p.name))]
    return sorted(found)


def _checkpoints(run: Path) -> list[StoredFile]:
    folder, out = run / "checkpoints", []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = _CHECKPOINT.match(path.name)
        if match and path.is_dir():
            size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            out.append(StoredFile(path.name, int(match.group(1)) / 1000, size))
    return out


def _snapshots(run: Path) -> list[StoredFile]:
    folder = run / "snapshots"
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    return [
        StoredFile(p.name, snapshot_kimg(p.name), p.stat().st_size) for p in files if snapshot_kimg(p.name) is not None
    ]


def read_run(path: Path) -> Run:
    """The run in `path`; UserError when it is not a run folder."""
    path = Path(path)
    if not (path / "config.json").is_file() and not (path / "log.txt").is_file():
        raise UserError(f"RUN {path}: not a ganforge run folder (no config.json or log.txt); pass the folder that "
                        "`ganforge train` made, e.g. runs/00000-mydata-auto-gpus1-batch32")  # fmt: skip
    log_path = path / "log.txt"
    log = log_path.read_text(encoding="utf-8", errors="replace").splitlines() if log_path.is_file() else []
    stats, bad = _jsonl(path / "stats.jsonl")
    reals = path / "reals.png"
    config = _json(path / "config.json")
    return Run(path=path, config=None if config is None else upgrade(config), env=_json(path / "env.json"), stats=stats,
               unreadable_stats=bad, metrics=_metrics(path), log=log, fakes=_fakes(path),
               reals=reals if reals.is_file() else None, checkpoints=_checkpoints(path), snapshots=_snapshots(path),
               status=run_status(log, stats, path))  # fmt: skip
