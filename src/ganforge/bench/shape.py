"""The images the bench times: their resolution, channels and labels, and where each value came from.

With `--data` they are the dataset's, read by the training reader (which bounds what a hostile file can make it
do), so the bench times the step `ganforge train --data` would run; an explicit `--resolution` or `--channels` that
contradicts the dataset is an error rather than a silent choice. Without `--data`: the flags, else the preset's
resolution, else the defaults. Every value records its source, which the result shows.
"""

from dataclasses import dataclass

from ganforge.bench.options import DEFAULT_CHANNELS, DEFAULT_RESOLUTION, BenchOptions, resolution_problems
from ganforge.data import open_dataset
from ganforge.errors import UserError
from ganforge.presets import PRESETS
from ganforge.train.resolver import DatasetFacts

DATA, DEFAULT = "--data", "default"


@dataclass(frozen=True)
class Shape:
    """What the synthetic images look like, the dataset they stand for (None: none given), and where resolution and
    channels came from: "--data", the flag ("--resolution", "--channels"), "--cfg" (the preset is made for one
    resolution) or "default"."""

    resolution: int
    channels: int
    label_dim: int  # label vector length the networks are built for (0: unconditional)
    sources: dict[str, str]
    dataset: DatasetFacts | None = None

    def facts(self) -> DatasetFacts:
        """The dataset facts `resolve` builds the training Config from."""
        name = "synthetic" if self.dataset is None else self.dataset.name
        # the data's width and height when its resolution is the one timed
        aspect = self.dataset.aspect if self.sources["resolution"] == DATA else (1, 1)
        return DatasetFacts(self.resolution, self.channels, self.label_dim, name, aspect=aspect)


def read_dataset(path: str) -> DatasetFacts:
    """The facts of --data, read as training reads them (a UserError naming --data when it cannot be opened)."""
    dataset = open_dataset(path, what=DATA)
    return DatasetFacts(dataset.resolution, dataset.channels, dataset.label_dim, dataset.name, aspect=dataset.aspect)


def choose_shape(options: BenchOptions, dataset: DatasetFacts | None) -> Shape:
    """The shape to time for `options` and the facts of their --data (None without); every problem at once."""
    (resolution, res_source), (channels, channel_source) = _resolution(options, dataset), _channels(options, dataset)
    problems = [] if dataset is None else _contradictions(options, dataset)
    if res_source == DATA and not problems:
        held = f"{DATA} {dataset.name} holds {resolution}x{resolution} images"
        problems += resolution_problems(resolution, held, options.cfg, "use a dataset of that resolution")
    label_dim = dataset.label_dim if options.cond and dataset is not None else 0
    if options.cond and label_dim == 0:
        what = "--data has no labels; build it with labels" if dataset else "give --data with labels"
        problems.append(f"--cond: {what}, or drop --cond")
    if problems:
        raise UserError(*problems)
    return Shape(resolution, channels, label_dim, {"resolution": res_source, "channels": channel_source}, dataset)


def _resolution(options: BenchOptions, dataset: DatasetFacts | None) -> tuple[int, str]:
    if options.resolution is not None:
        return options.resolution, "--resolution"
    if dataset is not None:
        return dataset.resolution, DATA
    made_for = PRESETS[options.cfg].resolution
    return (made_for, "--cfg") if made_for is not None else (DEFAULT_RESOLUTION, DEFAULT)


def _channels(options: BenchOptions, dataset: DatasetFacts | None) -> tuple[int, str]:
    if options.channels is not None:
        return options.channels, "--channels"
    if dataset is not None:
        return dataset.channels, DATA
    return DEFAULT_CHANNELS, DEFAULT


def _contradictions(options: BenchOptions, dataset: DatasetFacts) -> list[str]:
    """An explicit --resolution or --channels other than the dataset's: one message each, naming both."""
    problems = []
    for flag, given, actual, held in (
        ("--resolution", options.resolution, dataset.resolution, f"{dataset.resolution}x{dataset.resolution} images"),
        ("--channels", options.channels, dataset.channels, f"{dataset.channels}-channel images"),
    ):
        if given is not None and given != actual:
            problems.append(
                f"{flag} {given}: --data {dataset.name} holds {held}; drop {flag} (the bench takes it from --data) "
                "or drop --data"
            )
    return problems
