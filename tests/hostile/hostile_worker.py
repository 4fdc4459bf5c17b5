"""Runs a table of `ganforge` command lines in this one process (see hostile_harness.py), one JSON line per case.

    python hostile_worker.py CASES.json OUTCOMES.jsonl

Each case gets an alarm of its `seconds` plus a margin (an escaped CaseTimeout records a hang without waiting for
the whole table) and a fresh peak-RSS mark (Linux's /proc/self/clear_refs, 5 = reset the peak).
"""

import contextlib
import json
import signal
import sys
import time
import traceback
from pathlib import Path

from click.testing import CliRunner

import ganforge.data  # noqa: F401  (torch and the readers: imported before the first case's clock starts)
import ganforge.nets  # noqa: F401
from ganforge.cli import main as ganforge_main

ALARM_MARGIN_S = 20


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` in the code under test swallows it."""


def _on_alarm(signum, frame):
    raise CaseTimeout(f"still running after the alarm ({signum})")


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):  # not Linux: the peak is the process's since it started
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_case(case: dict) -> dict:
    _reset_peak_rss()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, case["seconds"] + ALARM_MARGIN_S)
    start = time.monotonic()
    try:
        result = CliRunner().invoke(ganforge_main, list(case["args"]), catch_exceptions=True)
        exception = None
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            exception = "".join(traceback.format_exception(*result.exc_info))
        exit_code, stdout, stderr = result.exit_code, result.stdout, result.stderr
    except CaseTimeout:
        exit_code, stdout, stderr, exception = None, "", "", "hang: " + traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds = time.monotonic() - start
    return dict(name=case["name"], exit_code=exit_code, stdout=stdout[-4000:], stderr=stderr[-4000:], seconds=seconds,
                peak_rss_mb=_peak_rss_mb(), exception=exception)  # fmt: skip


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    with open(sys.argv[2], "a") as out:
        for case in cases:
            out.write(json.dumps(run_case(case)) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
