"""Reading what a run folder holds (written by `ganforge train`), tolerating a run that is still writing, and one that
is damaged or was made by someone else.

`config.json`, `env.json`, `labels.json` (rundir.py); `log.txt`; `stats.jsonl`, one record per tick (sinks.py);
`metric-<name>.jsonl`, one result per line with the snapshot it measured and the images it used (metrics
`append_result`); `reals.png`, `fakes<kimg>.png`; `snapshots/network-snapshot-<kimg>.safetensors`;
`checkpoints/ckpt-<images>/`; `profile/summary.txt` (`train --profile`).

A report is for reading a run, so a damaged part costs only that part: each file is read only when it is a regular
file (a FIFO would block), at most as many bytes as such a file legitimately holds (the tail of a long log), and
parsed into plain values of bounded size and depth; a record that is not what train writes is skipped, counted and
warned about. Only a folder that is not a run at all is refused.
"""

import dataclasses
import errno
import json
import math
import os
import re
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

from ganforge.config import upgrade
from ganforge.durable import shorten
from ganforge.errors import UserError
from ganforge.report.status import Status, run_status
from ganforge.urls import public_text, public_value

# What a legitimate file holds, with room: config.json and env.json are a few KB; a tick's stats record is 1-5 KB and a
# month-long run has ~10^4 ticks; a metric result is ~1 KB; log.txt gains a line per tick (only its end matters).
MAX_JSON_BYTES = 1 << 20
MAX_LABELS_BYTES = 16 << 20  # labels.json: ~30 bytes a class, ~150 an entry of a label vector
MAX_STATS_BYTES = 256 << 20
MAX_METRIC_BYTES = 16 << 20
MAX_LOG_BYTES = 16 << 20
MAX_PROFILE_BYTES = 64 << 10  # profile/summary.txt: ~5 KB (a line per label and 20 operators)
MAX_LINE_BYTES = 1 << 20  # one JSON line (a record); a longer one is counted as unreadable
MAX_DEPTH = 32  # nesting of config.json / env.json / labels.json (train writes 2 or 3 levels)
MAX_METRIC_FILES = 32  # metric-<name>.jsonl files read (ganforge has 7 metrics)
MAX_KEY_CHARS = 200  # a stats or result key longer than this is not one train writes
MAX_ALERTS = 20  # alert texts kept per tick
MAX_TEXT_CHARS = 2000  # a log line or alert shown in the page
MAX_NUMBER = 1e100  # larger magnitudes are no training statistic (and overflow plot axes)
MAX_IMAGES = 10**9  # images a metric was computed on: more than any dataset or --num-gen

_NUMBER = r"([0-9]{1,30}(?:\.[0-9]{1,30})?)"
_FAKES = re.compile(rf"^fakes{_NUMBER}\.png$")
_SNAPSHOT = re.compile(rf"network-snapshot-{_NUMBER}\.safetensors$")
_CHECKPOINT = re.compile(r"^ckpt-([0-9]{1,30})$")
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
    stats: list[dict]  # {key: finite float} per tick (with "kimg"), and "alerts": [str] where the tick had alerts
    unreadable_stats: int  # lines of stats.jsonl that did not parse (the last one, while it is being written)
    # metric name -> results {"snapshot", "results": {key: float}, "kimg", "num_fake", "num_real" (each or None)}
    metrics: dict[str, list[dict]]
    log: list[str]
    fakes: list[tuple[float, Path]]  # (kimg, file), oldest first
    reals: Path | None
    checkpoints: list[StoredFile]
    snapshots: list[StoredFile]
    status: Status
    profile: str | None = None  # profile/summary.txt, when `train --profile` wrote one
    labels: dict | None = None  # labels.json as any JSON object (report/labels.py checks it), None when absent
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
    return [
        dataclasses.replace(run, heading=heading, label=number if short else heading)
        for run, heading, number in zip(runs, headings, numbers, strict=True)
    ]


def _warn(path: Path, problem: str) -> None:
    warnings.warn(f"{shorten(path)}: {problem}", stacklevel=3)


def read_regular(path: Path, limit: int, tail: bool = False, cut: bool = True) -> bytes | None:
    """At most `limit` bytes of `path` (its first, or with `tail` its last), when it is a regular file; None when it
    is absent, and with a warning when it is something else (a FIFO would block the reader forever), a symbolic link
    or unreadable. A larger file is cut at the limit (with a warning), or without `cut` left out (with a warning).

    Links are not followed: train never makes one in a run folder, and a planted `config.json -> ~/.docker/config.json`
    would put whatever file the user can read (credentials) into a page meant to be shared."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)  # never blocks, even on a FIFO
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        link = error.errno == errno.ELOOP and os.path.islink(path)
        _warn(
            path,
            "is a symbolic link, which is not followed; left out"
            if link
            else f"cannot be read ({error.strerror or error}); left out",
        )
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            _warn(path, "is not a regular file; left out")
            return None
        if info.st_size > limit and not cut:
            _warn(path, f"is {info.st_size:,} bytes, more than such a file holds ({limit:,}); left out")
            return None
        if info.st_size > limit:
            end = "last" if tail else "first"
            _warn(
                path, f"is {info.st_size:,} bytes, more than such a file holds; only its {end} {limit:,} bytes are read"
            )
            if tail:
                file.seek(info.st_size - limit)
        try:
            return file.read(limit)
        except OSError as error:
            _warn(path, f"cannot be read ({error.strerror or error}); left out")
            return None


def _depth_within(value, limit: int) -> bool:
    """Is `value` (parsed JSON) nested at most `limit` deep? Walked with a stack: no recursion to exhaust."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return False
            stack += [(child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)]
    return True


def parse_json(data: bytes | str):
    """The JSON value of `data`, or None when it does not parse (bad syntax, numbers Python will not convert,
    nesting deeper than the parser's recursion limit) or nests deeper than MAX_DEPTH."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # JSONDecodeError, a >4300-digit integer; a 10^5-deep array
        return None
    return value if _depth_within(value, MAX_DEPTH) else None


def _json_object(path: Path, limit: int = MAX_JSON_BYTES) -> dict | None:
    data = read_regular(path, limit, cut=False)
    if data is None:
        return None
    value = parse_json(data)
    if not isinstance(value, dict):
        _warn(path, f"is not a JSON object of at most {MAX_DEPTH} levels; left out")
        return None
    return value


def number(value) -> float | None:
    """`value` as a float when it is a finite real number of plausible size (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not -MAX_NUMBER <= value <= MAX_NUMBER:  # compared exactly: a huge int is never converted
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _numbers(record: dict) -> dict[str, float]:
    return {k: n for k, v in record.items() if len(k) <= MAX_KEY_CHARS and (n := number(v)) is not None}


def _jsonl(path: Path, limit: int) -> tuple[list, int]:
    """The parsed lines of a JSON-lines file (at most `limit` bytes of it), and how many lines did not parse."""
    data = read_regular(path, limit)
    if data is None:
        return [], 0
    values, bad = [], 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        value = parse_json(line) if len(line) <= MAX_LINE_BYTES else None
        if value is None:
            bad += 1
        else:
            values.append(value)
    return values, bad


def _stats_record(value) -> dict | None:
    """A tick's record as the report uses it: its numbers and its alert texts; None unless it has a finite kimg."""
    if not isinstance(value, dict) or number(value.get("kimg")) is None:
        return None
    record = _numbers(value)
    record.pop("alerts", None)  # a number there is no alert text
    alerts = value.get("alerts")
    texts = (
        [alerts]
        if isinstance(alerts, str)
        else [a for a in alerts if isinstance(a, str)]
        if isinstance(alerts, list)
        else []
    )
    if texts:
        record["alerts"] = [shorten(t, MAX_TEXT_CHARS) for t in texts[:MAX_ALERTS]]
    return record


def _stats(path: Path) -> tuple[list[dict], int]:
    values, bad = _jsonl(path, MAX_STATS_BYTES)
    records = [r for r in map(_stats_record, values) if r is not None]
    bad += len(values) - len(records)
    if bad > 1:  # one is the record being written while the run trains (the page notes it too)
        _warn(path, f"{bad} line(s) are not tick records (a damaged file?); skipped")
    return records, bad


def snapshot_kimg(snapshot: str | None) -> float | None:
    """12.0 for '.../network-snapshot-000012.safetensors', 0.016 for '...-000000.016...', None when not one."""
    match = _SNAPSHOT.search(snapshot) if isinstance(snapshot, str) else None
    return number(float(match.group(1))) if match else None


def image_count(value) -> int | None:
    """`value` as a count of images a metric used (a whole number from 0 to MAX_IMAGES), else None."""
    count = number(value)
    return int(count) if count is not None and count.is_integer() and 0 <= count <= MAX_IMAGES else None


def _metric_record(value) -> dict | None:
    """A result as the report uses it: its values, the snapshot's kimg, and how many fakes and reals it used (the
    page shows them beside every value: a value from a few hundred images is no comparable FID)."""
    if not isinstance(value, dict) or not isinstance(value.get("results"), dict):
        return None
    snapshot = value.get("snapshot") if isinstance(value.get("snapshot"), str) else None
    counts = {key: image_count(value.get(key)) for key in ("num_fake", "num_real")}
    return {"snapshot": snapshot, "results": _numbers(value["results"]), "kimg": snapshot_kimg(snapshot)} | counts


def _metrics(run: Path) -> dict[str, list[dict]]:
    out = {}
    files = sorted(run.glob("metric-*.jsonl"))
    if len(files) > MAX_METRIC_FILES:
        _warn(run, f"{len(files)} metric-*.jsonl files, more than ganforge writes; the first {MAX_METRIC_FILES} read")
    for path in files[:MAX_METRIC_FILES]:
        values, bad = _jsonl(path, MAX_METRIC_BYTES)
        records = [r for r in map(_metric_record, values) if r is not None]
        bad += len(values) - len(records)
        if bad:
            _warn(path, f"{bad} line(s) are not metric results; skipped")
        out[shorten(path.stem.removeprefix("metric-"), 60)] = records
    return out


def _is_regular(path: Path) -> bool:
    """A regular file itself (not a link to one: links are not followed, see read_regular)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:  # absent, no permission
        return False


def _fakes(run: Path) -> list[tuple[float, Path]]:
    found = []
    for path in run.glob("fakes*.png"):
        match = _FAKES.match(path.name)
        if match and _is_regular(path):
            found.append((float(match.group(1)), path))
        elif match:
            _warn(path, "is not a readable regular file; left out")
    return sorted(found)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _entries(folder: Path) -> list[Path]:
    """The entries of `folder`, sorted; none when it is not a folder or cannot be listed."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _checkpoints(run: Path) -> list[StoredFile]:
    out = []
    for path in _entries(run / "checkpoints"):
        match = _CHECKPOINT.match(path.name)
        if match and path.is_dir():
            size = sum(_size(f) for f in _entries(path) if _is_regular(f))
            out.append(StoredFile(path.name, int(match.group(1)) / 1000, size))
    return out


def _snapshots(run: Path) -> list[StoredFile]:
    folder = run / "snapshots"
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    return [StoredFile(p.name, kimg, _size(p)) for p in files if (kimg := snapshot_kimg(p.name)) is not None]


def _log(path: Path) -> list[str]:
    """The lines of log.txt (of its last MAX_LOG_BYTES), each cut to MAX_TEXT_CHARS."""
    data = read_regular(path, MAX_LOG_BYTES, tail=True)
    text = "" if data is None else public_text(data.decode("utf-8", errors="replace"))  # a run of older ganforge
    return [shorten(line, MAX_TEXT_CHARS) for line in text.splitlines()]


def _profile(run: Path) -> str | None:
    """profile/summary.txt (its first MAX_PROFILE_BYTES), when `profile` is a folder of the run itself: a link to a
    folder elsewhere is not followed, as no other link is."""
    folder = run / "profile"
    try:
        is_folder = stat.S_ISDIR(folder.lstat().st_mode)
    except OSError:  # absent, no permission
        return None
    if not is_folder:
        _warn(folder, "is not a folder (a link is not followed); its summary.txt is left out")
        return None
    data = read_regular(folder / "summary.txt", MAX_PROFILE_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def check_run_folder(path: Path) -> None:
    """UserError unless `path` is a run folder (it has a config.json or a log.txt)."""
    if not _is_regular(path / "config.json") and not _is_regular(path / "log.txt"):
        raise UserError(
            f"RUN {shorten(path)}: not a ganforge run folder (no config.json or log.txt); pass the folder "
            "that `ganforge train` made, e.g. runs/00000-mydata-auto-gpus1-batch32"
        )


def read_run(path: Path) -> Run:
    """The run in `path`; UserError when it is not a run folder. Damaged parts are left out with a warning each."""
    path = Path(path)
    check_run_folder(path)
    log = _log(path / "log.txt")
    stats, bad = _stats(path / "stats.jsonl")
    reals = path / "reals.png"
    config = _json_object(path / "config.json")
    return Run(
        path=path,
        config=None if config is None else public_value(upgrade(config)),  # older runs recorded URLs whole
        env=_json_object(path / "env.json"),
        stats=stats,
        unreadable_stats=bad,
        metrics=_metrics(path),
        log=log,
        fakes=_fakes(path),
        reals=reals if _is_regular(reals) else None,
        checkpoints=_checkpoints(path),
        snapshots=_snapshots(path),
        status=run_status(log, stats, path),
        profile=_profile(path),
        labels=_json_object(path / "labels.json", MAX_LABELS_BYTES),
    )
