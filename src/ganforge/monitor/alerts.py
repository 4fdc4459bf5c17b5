"""Alert rules over each tick's statistics: when the hardware or the training signals are the problem, say so once,
with the cause and the fix.

A rule maps the tick's record (and the records before it) to the conditions that hold now, {key: message}. An alert
is raised when its key starts to hold and again only after it has cleared, so a lasting condition is one line.
"""

import re
from collections import deque
from collections.abc import Callable

from ganforge.monitor.nvml import THROTTLE_REASONS
from ganforge.stat_names import (
    ALLOCATED_GB,
    ALLREDUCE_SHARE,
    DATA_WAIT_SHARE,
    LOSS_D,
    LOSS_G,
    PEAK_GB,
    SCORES_FAKE_D,
    SCORES_REAL,
    SKIPPED,
    TOTAL_GB,
)

HOT_C = 85  # most data-centre GPUs start slowing down a few degrees above this
LOW_UTIL_PCT, DATA_WAIT_LIMIT = 70, 0.10
GROWTH_TICKS = 5
MEMORY_SHARE = 0.95
ALLREDUCE_LIMIT = 0.25
STUCK_TICKS = 5
STUCK_TOLERANCE = 1e-6
WATCHED_LOSSES = (LOSS_G, LOSS_D)
_GPU_TEMP = re.compile(r"^((?:node\d+/)?GPU\d+)/temp$")

Rule = Callable[[dict, list[dict], int], dict[str, str]]


def hot_gpus(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """A GPU at HOT_C or above, or reporting a thermal, power or hardware slowdown, is slower than it should be."""
    out = {}
    for key, temp in record.items():
        match = _GPU_TEMP.match(key)
        if not match:
            continue
        gpu = match.group(1)
        hottest = record.get(f"{key}/max", temp)
        bits = int(record.get(f"{gpu}/throttle", 0))
        reasons = [name for bit, name in THROTTLE_REASONS.items() if bits & bit]
        if hottest >= HOT_C or reasons:
            why = ", ".join([f"{hottest:.0f} C"] + reasons)
            out[f"hot:{gpu}"] = (
                f"{gpu} is slowed down ({why}): improve cooling or airflow, check the power limit and "
                "`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`, and run `ganforge doctor`"
            )
    return out


def data_bound(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """GPUs idle while the step waits for images: the input pipeline is the bottleneck."""
    utils = [v for k, v in record.items() if re.fullmatch(r"(?:node\d+/)?GPU\d+/util", k)]
    wait = record.get(DATA_WAIT_SHARE, 0.0)
    if not utils or wait < DATA_WAIT_LIMIT or sum(utils) / len(utils) >= LOW_UTIL_PCT:
        return {}
    return {
        "data_bound": f"data-bound: GPU utilisation {sum(utils) / len(utils):.0f}% while {100 * wait:.0f}% of "
        "the time goes to waiting for data; build the dataset with `ganforge dataset build --format "
        "fast`, raise --workers, or read it from local disk or /dev/shm"
    }


def memory_growth(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """Allocated memory that grows tick after tick is a leak: the steady state of a training step is flat."""
    series = [r[ALLOCATED_GB] for r in [*history, record] if ALLOCATED_GB in r]
    recent = series[-GROWTH_TICKS - 1 :]
    if len(recent) <= GROWTH_TICKS or not all(b > a for a, b in zip(recent, recent[1:], strict=False)):
        return {}
    growth = recent[-1] - recent[0]
    return {
        "memory_growth": f"possible memory leak: allocated memory grew {GROWTH_TICKS} ticks in a row, by "
        f"{growth:.3f} GB up to tick {record['tick']} ({series[-1]:.2f} GB); look for tensors "
        "kept across steps (statistics that are not detached)"
    }


def memory_full(record: dict, history: list[dict], world: int) -> dict[str, str]:
    peak, total = record.get(PEAK_GB), record.get(TOTAL_GB)
    if peak is None or not total or peak < MEMORY_SHARE * total:
        return {}
    return {
        "memory_full": f"peak memory {peak:.1f} GB is {100 * peak / total:.0f}% of the device's {total:.1f} GB: "
        "lower --batch-gpu (gradient accumulation keeps the global --batch)"
    }


def interconnect_bound(record: dict, history: list[dict], world: int) -> dict[str, str]:
    share = record.get(ALLREDUCE_SHARE, 0.0)
    if world < 2 or share < ALLREDUCE_LIMIT:
        return {}
    return {
        "interconnect": f"interconnect-bound: all-reduce takes {100 * share:.0f}% of the step on {world} "
        "processes; raise --batch-gpu (fewer all-reduces per image) and check NVLink/InfiniBand "
        "with `ganforge doctor`"
    }


def scores_flipped(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """D(real) - D(fake) is positive while D tells reals from fakes; below zero it rates the fakes as more real."""
    if SCORES_REAL not in record or SCORES_FAKE_D not in record:
        return {}
    margin = record[SCORES_REAL] - record[SCORES_FAKE_D]
    if margin >= 0:
        return {}
    return {
        "scores_flipped": f"D(real) - D(fake) turned negative ({margin:+.3f}): D rates fakes above reals; if it "
        "lasts, look at the fakes*.png grids and resume an earlier checkpoint with a lower "
        "--glr or a larger --gamma (--allow-config-change)"
    }


def losses_stuck(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """A loss that does not move for several ticks means one network has stopped learning (a collapse)."""
    out = {}
    for key in WATCHED_LOSSES:
        series = [r[key] for r in [*history, record] if key in r][-STUCK_TICKS:]
        if len(series) == STUCK_TICKS and max(series) - min(series) <= STUCK_TOLERANCE * max(1.0, abs(series[-1])):
            out[f"stuck:{key}"] = (
                f"{key} has stayed at {series[-1]:.4f} for {STUCK_TICKS} ticks: training may "
                "have collapsed; check the fakes*.png grids and resume an earlier checkpoint with "
                "a larger --gamma or lower --glr/--dlr (--allow-config-change)"
            )
    return out


def skipped_rising(record: dict, history: list[dict], world: int) -> dict[str, str]:
    """More non-finite steps than the tick before: the run is drifting toward divergence."""
    now = sum(v for k, v in record.items() if k.startswith(SKIPPED))
    before = sum(v for k, v in history[-1].items() if k.startswith(SKIPPED)) if history else 0.0
    if now <= before:
        return {}
    return {
        "skipped_rising": f"non-finite steps rising: {now:g} skipped this tick (previous tick {before:g}); try "
        "--precision bf16 or fp32, a lower --glr/--dlr or a larger --gamma"
    }


RULES: tuple[Rule, ...] = (
    hot_gpus,
    data_bound,
    memory_growth,
    memory_full,
    interconnect_bound,
    scores_flipped,
    losses_stuck,
    skipped_rising,
)


class Alerts:
    """Which conditions hold, across ticks; `check(record)` returns the messages of those that just started."""

    def __init__(self, world: int, rules: tuple[Rule, ...] = RULES):
        self.world, self.rules = world, rules
        self._history: deque[dict] = deque(maxlen=max(GROWTH_TICKS, STUCK_TICKS) + 1)
        self._active: set[str] = set()

    def check(self, record: dict) -> list[str]:
        holding = {}
        for rule in self.rules:
            holding |= rule(record, list(self._history), self.world)
        started = [message for key, message in holding.items() if key not in self._active]
        self._active = set(holding)
        self._history.append(record)
        return started
