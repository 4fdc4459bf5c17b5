"""What `ganforge bench` measures, and the one place where its options become a training `Config`.

The bench times exactly what `ganforge train --cfg CFG` would run on a RESxRES dataset, so the Config comes from
`ganforge.train.resolver.resolve` with the facts of a synthetic dataset; only the channel widths can be overridden on
top.
"""

import dataclasses
from dataclasses import dataclass

from ganforge.config import AUGMENTS, AUTO_PRECISION, PRECISIONS, Config
from ganforge.errors import UserError
from ganforge.presets import DEFAULT_PRESET, PRESETS
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve

DEFAULT_RESOLUTION = 256  # for presets made for any resolution (auto, stylegan2, tiny)


@dataclass(frozen=True)
class BenchOptions:
    """`ganforge bench` settings; None takes the preset's value.

    `batch_gpu` None is the preset's batch per device; `auto_batch` searches powers of two up to `max_batch_gpu`.
    `memory_cap_gb` makes any batch whose peak memory (the CUDA allocator's peak, or the estimate on CPU) exceeds it
    count as out of memory; on CPU without a cap, the available system memory is the cap.
    """

    cfg: str = DEFAULT_PRESET
    resolution: int | None = None
    channels: int = 3
    cbase: int | None = None
    cmax: int | None = None
    precision: str = AUTO_PRECISION
    batch_gpu: int | None = None
    auto_batch: bool = False
    max_batch_gpu: int = 256
    memory_cap_gb: float | None = None
    compile: bool = False
    channels_last: bool = False
    aug: str = "ada"
    aug_p: float | None = None  # --aug fixed: the pipe's p; None: 1, every transform on every image
    steps: int = 10
    warmup: int = 2
    device: str = "auto"

    def __post_init__(self):
        assert self.cfg in PRESETS and self.precision in (*PRECISIONS, AUTO_PRECISION) and self.aug in AUGMENTS, self
        assert self.steps >= 1 and self.warmup >= 0 and self.max_batch_gpu >= 2, self
        if self.aug_p is not None and self.aug != "fixed":
            raise UserError(f"--aug-p {self.aug_p:g}: only used by --aug fixed; add --aug fixed or drop --aug-p")

    @property
    def fixed_p(self) -> float | None:
        """The p that `--aug fixed` times; None for the other modes."""
        if self.aug != "fixed":
            return None
        return 1.0 if self.aug_p is None else self.aug_p

    @classmethod
    def from_flags(cls, batch_gpu: str | None, **flags) -> "BenchOptions":
        """The CLI's flags, where `--batch-gpu` is a whole number or `auto`."""
        if batch_gpu is None or batch_gpu == "auto":
            return cls(batch_gpu=None, auto_batch=batch_gpu == "auto", **flags)
        if not batch_gpu.isdigit() or int(batch_gpu) < 1:
            raise UserError(f"--batch-gpu {batch_gpu}: give a whole number >= 1, or auto to search for the best")
        return cls(batch_gpu=int(batch_gpu), **flags)

    @property
    def image_resolution(self) -> int:
        return self.resolution or PRESETS[self.cfg].resolution or DEFAULT_RESOLUTION


def check(options: BenchOptions) -> None:
    """The problems `resolve` would phrase in terms of --data, phrased for the bench's own flags."""
    res, made_for = options.image_resolution, PRESETS[options.cfg].resolution
    problems = []
    if res < 4 or res & (res - 1):
        problems.append(f"--resolution {res}: not a power of two >= 4; use 8, 16, ..., 1024")
    if made_for is not None and res != made_for:
        problems.append(f"--resolution {res}: --cfg {options.cfg} is made for {made_for}; drop --resolution or use "
                        "--cfg auto or stylegan2")  # fmt: skip
    if problems:
        raise UserError(*problems)


def training_config(options: BenchOptions, world_size: int, device_type: str, batch_gpu: int | None = None) -> Config:
    """The Config of `ganforge train` for these options with `batch_gpu` images per device and no gradient
    accumulation (batch = batch_gpu x world_size); `batch_gpu` None keeps the preset's batch."""
    batches = {} if batch_gpu is None else {"batch": batch_gpu * world_size, "batch_gpu": batch_gpu}
    train_options = TrainOptions(data="synthetic", outdir="bench", preset=options.cfg, precision=options.precision,
                                 compile=options.compile, channels_last=options.channels_last, aug=options.aug,
                                 aug_p=options.fixed_p,
                                 device=device_type, **batches)  # fmt: skip
    synthetic = DatasetFacts(options.image_resolution, options.channels, label_dim=0, name="synthetic")
    cfg = resolve(train_options, Facts(synthetic, world_size, device_type))
    widths = {"channel_base": options.cbase, "channel_max": options.cmax}
    model = dataclasses.replace(cfg.model, **{key: value for key, value in widths.items() if value is not None})
    return dataclasses.replace(cfg, model=model)
