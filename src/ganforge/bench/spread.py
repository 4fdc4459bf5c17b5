"""How far the repeats of one measurement disagree, and the warning when they disagree too much to be trusted.

The training step is the same work in every repeat, so with nothing else running its repeats should agree closely; a
spread of more than SPREAD_LIMIT of the median means something else took the device or the CPUs part of the time
(another job, a second bench, a throttled GPU), and then any one figure, the median included, may be off by as
much.
"""

import statistics
from dataclasses import dataclass

SPREAD_LIMIT = 0.2  # (max - min) / median of img/s above which the result is flagged


@dataclass(frozen=True)
class Spread:
    low: float
    median: float
    high: float

    @property
    def relative(self) -> float:
        """(max - min) / median."""
        return (self.high - self.low) / self.median

    def as_dict(self) -> dict:
        return {"min": self.low, "median": self.median, "max": self.high}


def spread_of(values: list[float]) -> Spread:
    return Spread(min(values), statistics.median(values), max(values))


def spread_warning(img_per_s: Spread, repeats: int, device_type: str) -> str | None:
    """One `warning:` line when the img/s of the repeats spread wider than SPREAD_LIMIT of their median, else None."""
    if img_per_s.relative <= SPREAD_LIMIT:
        return None
    others = "on this GPU (nvidia-smi lists them) or its CPUs" if device_type == "cuda" else "on these CPUs (see top)"
    return (
        f"warning: img/s spread from {img_per_s.low:.3g} to {img_per_s.high:.3g} over {repeats} repeats "
        f"({100 * img_per_s.relative:.0f}% of the median {img_per_s.median:.3g}, more than "
        f"{100 * SPREAD_LIMIT:.0f}%): another load on the machine is the likely cause; stop the other jobs "
        f"{others} and rerun, or raise --repeat and --steps"
    )
