"""What `ganforge explore` refused, told once per burst: the refusals of each reason are counted, and one line sums
them up `window_s` seconds after the first of the burst. A flood of thousands of bad connections is then a line every
few seconds on stderr, never a line (or a traceback) per socket."""

import asyncio
import collections
import sys
import time

from ganforge.generate.typed import echoed

WINDOW_S = 10.0


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Rejections:
    """Counts refusals by reason within the running event loop; `write` receives each summary line."""

    def __init__(self, window_s: float = WINDOW_S, write=_stderr):
        self.window_s, self.write = window_s, write
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, str] = {}
        self.since: float | None = None

    def note(self, reason: str, example: str | None = None) -> None:
        """One more refusal for `reason` (what was refused and how, as a plural: "requests refused without the token");
        `example`: what the first of them sent, shown."""
        self.counts[reason] += 1
        if example is not None:
            self.examples.setdefault(reason, example)
        if self.since is None:
            self.since = time.monotonic()
            asyncio.get_running_loop().call_later(self.window_s, self.flush)

    def flush(self) -> None:
        """Write the line summing up what was refused since the burst began (nothing if nothing was)."""
        if self.since is None:
            return
        parts = []
        for reason, count in self.counts.items():
            example = f" (e.g. {echoed(self.examples[reason], 40)!r})" if reason in self.examples else ""
            parts.append(f"{count:,} {reason}{example}")
        self.write(f"ganforge explore, the last {time.monotonic() - self.since:.0f} s: {'; '.join(parts)}")
        self.counts.clear()
        self.examples.clear()
        self.since = None
