"""The typed values of `ganforge generate` that are more than a number: seed lists (`0-7,12`), grids (`4x8`) and
translations (`0.25,-0.1`), parsed with every problem appended to a list and written back as the command line takes
them, and how a message repeats a typed value."""

import math
import re

MAX_SEED = 2**32 - 1  # numpy.random.RandomState accepts seeds below 2**32
MAX_COUNT = 1_000_000  # images named by one option: a typo such as 0-100000000 fails fast instead of running for days
# StyleGAN3 moves its image by shifting the phases of its Fourier input (float32): 100 image widths already shift the
# finest frequencies by ~10^4 radians, where float32 keeps ~2^-7 rad of the phase; further, the input loses detail.
TRANSLATE_RANGE = (-100.0, 100.0)
MAX_PROBLEMS_PER_FLAG = 10  # a value with thousands of bad parts is reported by its first few
MAX_SHOWN = 60  # characters of a typed value repeated in a message
RANGE_PART = re.compile(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?")


def parse_ranges(flag: str, text: str, problems: list) -> tuple[int, ...]:
    """ "0-7,12,100-199" -> (0, ..., 7, 12, 100, ..., 199) in the order given; each problem is appended (the first
    MAX_PROBLEMS_PER_FLAG different ones, then how many more bad parts there are). At most MAX_COUNT values, each
    from 0 to MAX_SEED."""
    values, found = [], FirstProblems(MAX_PROBLEMS_PER_FLAG)
    shown = echoed(text)
    for part in text.split(","):
        match = RANGE_PART.fullmatch(part)
        if match is None:
            found.add(f"{flag} {shown}: {echoed(part.strip(), 20)!r} is not N or N-M (e.g. 0-7,12,100-199)")
            continue
        too_big = [d for d in (match[1], match[2]) if d and _above_max_seed(d)]
        if too_big:
            found.add(f"{flag} {shown}: {echoed(too_big[0], 20)} is above {MAX_SEED}")
            continue
        first, last = _int(match[1]), _int(match[2] or match[1])
        if last < first:
            found.add(f"{flag} {shown}: range {first}-{last} runs backwards; write {last}-{first}")
        elif len(values) + last - first + 1 > MAX_COUNT:
            found.add(f"{flag} {shown}: more than {MAX_COUNT:,} values; split the work into several runs")
            break
        else:
            values.extend(range(first, last + 1))
    problems += found.lines(flag)
    return tuple(values)


class FirstProblems:
    """The first `limit` different problems with one flag's value, in order, and how many more bad parts it has.
    Only those shown are kept, so that a value of a million bad parts costs no more memory than one of eleven."""

    def __init__(self, limit: int):
        self.shown, self.more, self.limit = {}, 0, limit  # shown: a dict as an ordered set ("x,x,x": one line)

    def add(self, problem: str) -> None:
        if problem in self.shown or len(self.shown) < self.limit:
            self.shown[problem] = None
        else:
            self.more += 1

    def lines(self, flag: str) -> list[str]:
        return [*self.shown] + ([f"{flag}: {self.more:,} more bad part(s)"] if self.more else [])


def _above_max_seed(digits: str) -> bool:
    """Is the number above MAX_SEED? Decided by length first, so that a 5,000-digit typo is not converted (Python
    refuses to beyond 4,300 digits)."""
    return len(digits.lstrip("0")) > len(str(MAX_SEED)) or _int(digits) > MAX_SEED


def _int(digits: str) -> int:
    """A decimal number of at most a few significant digits, whatever its leading zeros."""
    return int(digits.lstrip("0") or "0")


def echoed(text: str, limit: int = MAX_SHOWN) -> str:
    """A typed value as a message repeats it: at most `limit` characters."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_grid(text: str, problems: list) -> tuple[int, int] | None:
    match = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", text)
    if match is None or "" in (match[1].strip("0"), match[2].strip("0")):
        problems.append(f"--grid {echoed(text)}: write ROWSxCOLUMNS with both at least 1, e.g. 4x8")
        return None
    if max(len(match[1].lstrip("0")), len(match[2].lstrip("0"))) > len(str(MAX_COUNT)):
        problems.append(f"--grid {echoed(text)}: more than {MAX_COUNT:,} images; split the work into several grids")
        return None
    return _int(match[1]), _int(match[2])


def parse_translate(text: str, problems: list) -> tuple[float, float]:
    low, high = TRANSLATE_RANGE
    parts = text.split(",")
    try:
        x, y = (float(part) for part in parts)
        if all(math.isfinite(v) and low <= v <= high for v in (x, y)):
            return x, y
    except ValueError:
        pass  # reported below, with the other malformed forms
    problems.append(
        f"--translate {echoed(text)}: write X,Y in image widths, each from {low:g} to {high:g}, e.g. 0.25,-0.1"
    )
    return (0.0, 0.0)


def ranges_text(values: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 9) -> "0-3,9": consecutive runs as ranges, as parse_ranges reads them."""
    parts, start = [], 0
    for k in range(1, len(values) + 1):
        if k == len(values) or values[k] != values[k - 1] + 1:
            first, last = values[start], values[k - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = k
    return ",".join(parts)


def grid_text(grid: tuple[int, int]) -> str:
    return f"{grid[0]}x{grid[1]}"


def numbers_text(values: tuple[float, ...]) -> str:
    """(0.25, -0.1) -> "0.25,-0.1": each number exactly (repr), as parse_translate and a label vector read them."""
    return ",".join(map(repr, values))
