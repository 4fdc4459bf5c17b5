"""`--batch-gpu auto`: the largest per-device batch that fits, and the fastest one in images per second.

Powers of two from 2 are tried in turn until one runs out of memory (a CUDA out-of-memory error, or a peak above
the memory cap) or the largest allowed size has run; a size whose step, traced on fake tensors before anything is
built (ganforge.train.step_memory), would not fit the cap or the GPU's free memory ends the search untried. A
failed size is cleaned up (its objects dropped, CUDA's cache emptied) before the next.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ganforge.bench.measure import Measurement
from ganforge.bench.memory import OutOfMemory, release
from ganforge.errors import UserError


@dataclass(frozen=True)
class Candidate:
    """One batch size tried: its measurement, or why it did not fit."""

    batch_gpu: int
    measurement: Measurement | None
    out_of_memory: str | None = None


@dataclass(frozen=True)
class SearchResult:
    candidates: list[Candidate]
    largest_fit: int
    fastest: int
    recommended: int  # the fastest that divides the preset's global batch (a larger one would change the maths)
    limit: str  # what ended the search: "memory" or "max-batch-gpu"

    def measurement_of(self, batch_gpu: int) -> Measurement:
        return next(c.measurement for c in self.candidates if c.batch_gpu == batch_gpu)


def candidate_sizes(max_batch_gpu: int) -> list[int]:
    """2, 4, 8, ... up to `max_batch_gpu` (even sizes keep path-length's half batches whole)."""
    sizes, size = [], 2
    while size <= max_batch_gpu:
        sizes.append(size)
        size *= 2
    return sizes


def try_sizes(
    sizes: list[int],
    measure_size: Callable[[int], Measurement],
    device: torch.device,
    predicted_out_of_memory: Callable[[int], str | None] = lambda size: None,
) -> list[Candidate]:
    """Measure each size until the first that runs out of memory (kept, with its reason, as the last candidate). A
    size whose traced step is predicted not to fit (`predicted_out_of_memory`: why, or None) ends the search before
    it is built."""
    candidates = []
    for size in sizes:
        predicted = predicted_out_of_memory(size)
        if predicted is not None:
            candidates.append(Candidate(size, None, predicted))
            break
        failure = None
        try:
            candidates.append(Candidate(size, measure_size(size)))
        except (torch.cuda.OutOfMemoryError, OutOfMemory) as error:
            failure = str(error).splitlines()[0]
        release(device)  # after the except block, which keeps the failed attempt's frames alive until it ends
        if failure is not None:
            candidates.append(Candidate(size, None, failure))
            break
    return candidates


def summarize(candidates: list[Candidate], preset_batch: int, world_size: int) -> SearchResult:
    """Largest fitting, fastest, and recommended batch per device; UserError when not even the smallest fits."""
    fits = [c for c in candidates if c.measurement is not None]
    if not fits:
        raise UserError(
            f"--batch-gpu auto: not even {candidates[0].batch_gpu} images per device fit "
            f"({candidates[0].out_of_memory}); lower --resolution, --cbase or --cmax, or raise --memory-cap"
        )
    fastest = max(fits, key=lambda c: c.measurement.img_per_s)
    dividing = [c for c in fits if preset_batch % (c.batch_gpu * world_size) == 0] or fits
    recommended = max(dividing, key=lambda c: c.measurement.img_per_s)
    limit = "memory" if candidates[-1].measurement is None else "max-batch-gpu"
    return SearchResult(candidates, fits[-1].batch_gpu, fastest.batch_gpu, recommended.batch_gpu, limit)
