"""The one place where the bench's options become a training `Config`.

The bench times exactly what `ganforge train --cfg CFG` would run on a dataset of the bench's shape (that of
`--data`, or a synthetic one), so the Config comes from `ganforge.train.resolver.resolve` with that dataset's facts.
"""

from ganforge.bench.options import TRAINING, BenchOptions
from ganforge.bench.shape import Shape
from ganforge.config import Config
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import Facts, resolve


def training_config(
    options: BenchOptions, shape: Shape, world_size: int, device_type: str, batch_gpu: int | None = None
) -> Config:
    """The Config of `ganforge train` for these options and images of `shape`, with `batch_gpu` images per device
    and no gradient accumulation (batch = batch_gpu x world_size); `batch_gpu` None keeps the preset's batch."""
    batches = {} if batch_gpu is None else {"batch": batch_gpu * world_size, "batch_gpu": batch_gpu}
    training = {name: getattr(options, name) for name in TRAINING}
    train_options = TrainOptions(
        data="synthetic", outdir="bench", aug_p=options.fixed_p, **training | {"device": device_type}, **batches
    )
    return resolve(train_options, Facts(shape.facts(), world_size, device_type))
