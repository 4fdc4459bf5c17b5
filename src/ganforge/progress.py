"""Progress bars, on a terminal only.

A bar redraws itself with carriage returns; written to a log file or a pipe (a batch job's stderr) those updates
pile up into one long line interleaved with warnings. Off a terminal the bars are off, and the lines the commands
print (ticks, results, errors) are the record.
"""

import sys

from tqdm import tqdm


def progress_bar(iterable=None, *, enabled: bool = True, **options) -> tqdm:
    """tqdm on stderr, drawn only when `enabled` and stderr is a terminal (a disabled bar still iterates)."""
    return tqdm(iterable, file=sys.stderr, disable=not (enabled and sys.stderr.isatty()), **options)
