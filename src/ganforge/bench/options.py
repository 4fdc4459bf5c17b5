"""What `ganforge bench` measures: its options. Those it shares with `train` (TRAINING) are train's own
declarations: same flags, help, choices and defaults (None here = train's default); its own options are declared on
the fields of `BenchOptions`. Imports no torch: `ganforge --help` reads it.
"""

from dataclasses import dataclass

from ganforge.config import PrecisionConfig, RuntimeConfig
from ganforge.config.sections import MAX_BATCH
from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok
from ganforge.option import Range, declared, option, value_problems
from ganforge.presets import DEFAULT_PRESET, PRESETS
from ganforge.train.options import TRAIN_OPTIONS

DEFAULT_RESOLUTION = 256  # without --data, for presets made for any resolution (auto, stylegan2, tiny)
DEFAULT_CHANNELS = 3
MAX_REPEAT = 100
MEASURE = "Measurement"
OTHER = "Other"  # the help's last section: how the result is printed, beside --help
# The `train` options the bench takes as train does; the others keep train's defaults.
TRAINING = ("preset", "cond", "precision", "fp16_res", "compile", "kernels", "channels_last", "aug", "device", "cbase",
            "cmax", "g_arch", "d_arch", "g_attn", "d_attn")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """`ganforge bench` settings. The TRAINING fields are None (False for a switch) unless given, as in
    `TrainOptions`, and then take train's default; `resolution` and `channels` None come from `data` (a dataset
    path), else the preset or the defaults (`ganforge.bench.shape`); `batch_gpu` None is the preset's batch per
    device; `auto_batch`
    searches powers of two up to `max_batch_gpu`. `memory_cap_gb` makes any batch whose peak memory (the CUDA
    allocator's peak, or the estimate on CPU) exceeds it count as out of memory; on CPU without a cap, the available
    system memory is the cap. `as_json` only says how the command prints the result."""

    preset: str | None = None
    cond: bool = False
    precision: str | None = None
    fp16_res: int | None = None
    compile: str | None = None
    kernels: str | None = None
    channels_last: bool = False
    aug: str | None = None
    device: str | None = None
    cbase: int | None = None
    cmax: int | None = None
    g_arch: str | None = None
    d_arch: str | None = None
    g_attn: str | None = None
    d_attn: str | None = None
    data: str | None = option(
        MEASURE,
        "Time the step for this dataset (folder, zip or archive): its resolution, channels and, with --cond, labels.",
        default=None,
        flag="--data",
        metavar="PATH",
        shown_default="synthetic",
    )
    resolution: int | None = option(
        MEASURE,
        "Image side.",
        default=None,
        range=Range(1),
        shown_default=f"from --data, else the preset's, else {DEFAULT_RESOLUTION}",
    )
    channels: int | None = option(
        MEASURE,
        "Image channels.",
        default=None,
        range=Range(1, 4),
        shown_default=f"from --data, else {DEFAULT_CHANNELS}",
    )
    batch_gpu: int | None = option(
        MEASURE,
        "Images per device; auto finds the largest that fits and the fastest.",
        default=None,
        kind=str,
        metavar="N|auto",
        shown_default="preset batch / devices",
    )
    auto_batch: bool = False  # --batch-gpu auto
    max_batch_gpu: int = option(MEASURE, "Largest size --batch-gpu auto tries.", default=256, range=Range(2, MAX_BATCH))
    memory_cap_gb: float | None = option(
        MEASURE,
        "Count a batch whose peak memory exceeds this as out of memory (to plan for a smaller GPU).",
        default=None,
        flag="--memory-cap",
        name="memory_cap_gb",
        range=Range(0, low_open=True),
        metavar="GB",
        shown_default="the GPU's memory; on CPU the available RAM",
    )
    aug_p: float | None = option(
        MEASURE,
        "With --aug fixed: each transform's probability (1: every transform on every image, the most the pipe can "
        "cost).",
        default=None,
        range=Range(0, 1),
        shown_default="1 with --aug fixed",
    )
    steps: int = option(MEASURE, "Timed calls of each phase per repeat (median).", default=10, range=Range(1, 1000))
    warmup: int = option(MEASURE, "Untimed calls of each phase first.", default=2, range=Range(0, 1000))
    repeat: int = option(
        MEASURE,
        "Time the --steps calls this many times and report min / median / max (a wide spread: another load on the "
        "machine).",
        default=3,
        range=Range(1, MAX_REPEAT),
    )
    as_json: bool = option(OTHER, "Print one JSON object (schema: docs/bench.md).", default=False, flag="--json")

    def __post_init__(self):
        check(self)

    @property
    def fixed_p(self) -> float | None:
        """The p that `--aug fixed` times; None for the other modes."""
        if self.aug != "fixed":
            return None
        return 1.0 if self.aug_p is None else self.aug_p

    @classmethod
    def from_flags(cls, batch_gpu: str | None, **flags) -> "BenchOptions":
        """The CLI's flags (None: not given, the field's default applies), where `--batch-gpu` is a whole number or
        `auto`."""
        flags = {name: value for name, value in flags.items() if value is not None}
        if batch_gpu is None or batch_gpu == "auto":
            return cls(batch_gpu=None, auto_batch=batch_gpu == "auto", **flags)
        if not batch_gpu.isdigit() or int(batch_gpu) < 1:
            raise UserError(f"--batch-gpu {batch_gpu:.40}: give a whole number >= 1, or auto to search for the best")
        return cls(batch_gpu=int(batch_gpu), **flags)

    @property
    def cfg(self) -> str:
        return self.preset or DEFAULT_PRESET

    @property
    def device_choice(self) -> str:
        return self.device or RuntimeConfig.device

    @property
    def precision_choice(self) -> str:
        return self.precision or PrecisionConfig.mode


# Every option of `ganforge bench`: train's TRAINING options, then the bench's own.
BENCH_OPTIONS = [d for d in TRAIN_OPTIONS if d.name in TRAINING] + declared(BenchOptions)


def check(options: BenchOptions) -> None:
    """Every value against its declaration, and the problems `resolve` would phrase in terms of --data, phrased for
    the bench's own flags (those that need the dataset of --data are `bench.shape`'s)."""
    problems = value_problems(BENCH_OPTIONS, options)
    res = options.resolution
    if res is not None and not problems:
        problems += resolution_problems(res, f"--resolution {res}", options.cfg, "drop --resolution")
    if options.aug_p is not None and options.aug != "fixed":
        problems.append(f"--aug-p {options.aug_p:g}: only used by --aug fixed; add --aug fixed or drop --aug-p")
    if problems:
        raise UserError(*problems)


def resolution_problems(resolution: int, named: str, cfg: str, instead: str) -> list[str]:
    """Why `resolution` (`named`: the flag and value it came from) cannot be timed with --cfg `cfg`; `instead` is the
    first fix to offer when the preset is made for another resolution."""
    if not resolution_ok(resolution):
        return [f"{named}: not {RESOLUTIONS}; use 8, 16, ..., 1024"]
    made_for = PRESETS[cfg].resolution if cfg in PRESETS else None
    if made_for is not None and resolution != made_for:
        return [f"{named}: --cfg {cfg} is made for {made_for}; {instead} or use --cfg auto or stylegan2"]
    return []
