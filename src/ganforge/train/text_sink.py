"""The run's text sink: `log.txt` and the terminal, where a progress bar is drawn on a terminal and each line is
printed plainly (and flushed) otherwise. Each tick is a status line; an alert, a warning line."""

import threading
from pathlib import Path

from ganforge.events import Quiet
from ganforge.monitor.telemetry import status_text
from ganforge.progress import progress_bar
from ganforge.stat_names import (
    AUG_P,
    DATA_WAIT_SHARE,
    IMG_PER_S,
    LOSS_D,
    LOSS_G,
    PEAK_GB,
    SCORES_REAL,
    SEC_PER_KIMG,
    SKIPPED,
    TOTAL_S,
)
from ganforge.urls import public_text


class TextSink(Quiet):
    """Lines for the user in `log.txt` and on the terminal. `print` may be called from other threads (the trackers'
    warnings): one lock keeps the lines whole and in the order they came."""

    def __init__(self, path: Path, total_nimg: int, start_nimg: int):
        self.total_nimg, self.start_nimg = total_nimg, start_nimg
        self._lock = threading.Lock()
        self._text = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        bar = progress_bar(total=total_nimg / 1000, initial=start_nimg / 1000, unit="kimg", dynamic_ncols=True)
        self._bar = None if bar.disable else bar

    def print(self, text: str) -> None:
        """A line for the terminal (above the bar) and log.txt; a URL in it public (a tracker's error may quote its
        server's). After the close, the terminal only."""
        text = public_text(text)
        with self._lock:
            if self._bar is not None:
                self._bar.write(text)
            else:
                print(text, flush=True)
            if not self._text.closed:
                self._text.write(text + "\n")
                self._text.flush()

    def line(self, text: str, terminal: bool) -> None:
        if terminal:
            self.print(text)
            return
        with self._lock:
            self._text.write(public_text(text) + "\n")
            self._text.flush()

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        if self._bar is not None:
            self._bar.update(nimg / 1000 - self._bar.n)
            self._bar.set_postfix_str(f"{record[IMG_PER_S]:.1f} img/s")
        # the rate of the whole run so far, from when its clock started: what the rest most likely takes
        done_rate = (nimg - self.start_nimg) / max(record[TOTAL_S], 1e-9)
        self.print(status_line(record, self.total_nimg, (self.total_nimg - nimg) / max(done_rate, 1e-9)))
        for alert in alerts:
            self.print(f"warning: {alert}")

    def metric(self, record: dict, nimg: int) -> None:
        for key, value in record["results"].items():
            self.print(f"metric {key} = {value:.4g} ({record['seconds']:.0f} s)")

    def close(self, outcome: str) -> None:
        if self._bar is not None:
            self._bar.close()
        self._text.close()


def status_line(r: dict, total_nimg: int, eta_s: float) -> str:
    skipped = sum(v for k, v in r.items() if k.startswith(SKIPPED))
    parts = [
        f"tick {r['tick']:<4d}",
        f"kimg {r['kimg']:.3f}/{total_nimg / 1000:g}",
        f"{r[IMG_PER_S]:.1f} img/s",
        f"{r[SEC_PER_KIMG]:.1f} s/kimg",
        f"data {100 * r[DATA_WAIT_SHARE]:.0f}%",
    ]
    for key, label in ((LOSS_G, "G"), (LOSS_D, "D"), (SCORES_REAL, "D(real)"), (AUG_P, "p")):
        if key in r:
            parts.append(f"{label} {r[key]:.3f}")
    hardware = status_text(r)
    parts += [
        f"mem {r[PEAK_GB]:.2f} GB",
        *([hardware] if hardware else []),
        f"skipped {skipped:g}",
        f"eta {hms(eta_s)}",
    ]
    return "  ".join(parts)


def hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
