"""Rank 0's sinks of a run folder: `stats.jsonl` (one JSON record per tick), TensorBoard scalars and sample grids,
the experiment trackers when asked for, and `log.txt` with the terminal (train/text_sink.py)."""

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ganforge.durable import check_destination
from ganforge.events import Quiet, Sink
from ganforge.train.text_sink import TextSink


class JsonlSink(Quiet):
    """stats.jsonl: each tick's record, with its alerts under `alerts` when there are any."""

    def __init__(self, path: Path):
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        self._file.write(json.dumps(record | ({"alerts": alerts} if alerts else {})) + "\n")
        self._file.flush()

    def close(self, outcome: str) -> None:
        self._file.close()


class TensorBoardSink(Quiet):
    """TensorBoard's event file in the run folder: a tick's finite values, metric results under Metrics/, grids."""

    def __init__(self, run_dir: Path):
        from torch.utils.tensorboard import SummaryWriter  # slow import; rank 0 only

        self._writer = SummaryWriter(str(run_dir))

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        for key, value in record.items():
            if key not in ("tick", "kimg") and math.isfinite(value):
                self._writer.add_scalar(key, value, nimg)
        self._writer.flush()

    def metric(self, record: dict, nimg: int) -> None:
        for key, value in record["results"].items():
            self._writer.add_scalar(f"Metrics/{key}", value, nimg)

    def images(self, tag: str, grid: np.ndarray, path: Path, nimg: int) -> None:
        self._writer.add_image(tag, grid, nimg, dataformats="HWC")
        self._writer.flush()

    def close(self, outcome: str) -> None:
        self._writer.close()


def folder_sinks(
    run_dir: Path,
    total_nimg: int,
    start_nimg: int,
    trackers: Callable[[Callable[[str], None]], Sink | None] | None = None,
) -> list[Sink]:
    """The sinks of `run_dir`, in the order every event reaches them: stats.jsonl, TensorBoard, the trackers
    (`trackers(say)`, None for none: `say` prints through the text sink, so that their threads' warnings reach
    log.txt), then log.txt and the terminal. The text sink comes last so that the terminal's status line follows
    what the files already hold, and it closes last so that the trackers' closing warnings still reach log.txt."""
    for name in ("log.txt", "stats.jsonl"):  # a FIFO planted there would block every line
        check_destination(run_dir / name)
    text = TextSink(run_dir / "log.txt", total_nimg, start_nimg)
    sinks = [JsonlSink(run_dir / "stats.jsonl"), TensorBoardSink(run_dir)]
    tracked = trackers(text.print) if trackers is not None else None
    return [*sinks, *([tracked] if tracked is not None else []), text]
