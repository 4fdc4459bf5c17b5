"""The options of `ganforge sweep`. Those it hands to every trial as `train` takes them (SHARED) are train's own
declarations; its own are declared on the fields of `SweepOptions`. Imports no torch and no Optuna: `ganforge
--help` reads it.
"""

from dataclasses import dataclass

from ganforge.errors import UserError
from ganforge.option import Range, declared, option, value_problems
from ganforge.sweep.measure import metric_problem
from ganforge.train.options import TRAIN_OPTIONS

STUDY = "Study"
SPACE_HELP = (
    "One dimension of the search, NAME=SPEC, repeated: NAME is any `ganforge train` option without its dashes, SPEC "
    "is log:LOW..HIGH (log-uniform), LOW..HIGH (uniform; whole numbers for a whole-number option), A|B|C (a choice) "
    "or one VALUE (fixed for every trial, e.g. batch=16). The family's default space applies, each entry replacing "
    "the default of its option."
)
PRUNERS = ("median", "halving", "none")
# The `train` options every trial gets as given here; the others come from --space or keep train's defaults.
SHARED = ("data", "preset", "kimg", "metrics_gen", "device")


@dataclass(frozen=True, kw_only=True)
class SweepOptions:
    """`ganforge sweep` settings. The SHARED fields are None unless given (train's default applies in each trial)."""

    data: str
    preset: str | None = None
    kimg: float | None = None
    metrics_gen: int | None = None
    device: str | None = None
    outdir: str = option(
        STUDY,
        "The sweep's folder: trials/<number>/ holds each trial's run folder; sweep.json the study's name and "
        "storage; report.html the sweep report. Rerun the same command to continue the study.",
        required=True,
        metavar="DIR",
    )
    trials: int = option(STUDY, "Trials in the study, all machines together.", default=20, range=Range(1, 10**5))
    metric: str = option(
        STUDY,
        "The metric to optimise, measured at every snapshot (fid*/kid*/swd*/ppl*: lower is better; is50k, eq*: "
        "higher).",
        default="kid50k_full",
    )
    space: tuple[str, ...] = option(STUDY, SPACE_HELP, default=(), kind=str, multiple=True, metavar="NAME=SPEC")
    storage: str | None = option(
        STUDY,
        "Optuna RDB storage URL shared by every machine of the study (postgresql://user:pass@host/db, mysql://...); "
        "its password is never written or shown.",
        default=None,
        metavar="URL",
        envvar="GANFORGE_SWEEP_STORAGE",
        shown_default="sqlite file DIR/study.db",
    )
    study: str = option(STUDY, "The study's name in the storage.", default="ganforge-sweep", metavar="NAME")
    parallel: int = option(
        STUDY,
        "Trials run at once on this machine: each on a GPU of its own where there are GPUs; on a CPU they share its "
        "cores.",
        default=1,
        range=Range(1, 1024),
    )
    pruner: str = option(
        STUDY,
        "Stop trials that fall behind: median (below the median of the trials before at the same point), halving "
        "(successive halving) or none.",
        default="median",
        choices=PRUNERS,
    )
    sampler_seed: int = option(STUDY, "Seed of the sampler choosing the trials' settings.", default=0,
                               range=Range(0, 2**32 - 1, whole=True))  # fmt: skip

    def __post_init__(self):
        problems = value_problems(SWEEP_OPTIONS, self)
        if (problem := metric_problem(self.metric)) is not None:
            problems.append(problem)
        if problems:
            raise UserError(*problems)


SWEEP_OPTIONS = [d for d in TRAIN_OPTIONS if d.name in SHARED] + declared(SweepOptions)


def shared_words(options: SweepOptions) -> list[str]:
    """The `ganforge train` words every trial shares: --data, and --cfg and --kimg where given."""
    words = ["--data", options.data]
    words += ["--cfg", options.preset] if options.preset else []
    return words + (["--kimg", f"{options.kimg:g}"] if options.kimg is not None else [])
