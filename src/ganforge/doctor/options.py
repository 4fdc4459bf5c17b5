"""What `ganforge doctor` checks and how it prints the report: its options, each declared on the field it sets
(`ganforge.option`), from which the command's click options are derived."""

import dataclasses
from pathlib import Path

from ganforge.config import AUTO_PRECISION, PRECISIONS
from ganforge.option import declared, option, refuse_bad_values

SECTION = "Options"  # the one heading of `ganforge doctor --help`


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """What to check: `data` is a dataset to open and time, `outdir` where runs will be written, `quick` shortens
    the benchmarks, `precision` is the one the tiny StyleGAN2 step runs in (train's `--precision`; `auto`, the
    default there too, is resolved as train resolves it on this machine). `as_json` only says how the command prints
    the report, so the report's settings leave it out."""

    as_json: bool = option(
        SECTION, "Print only the report, as JSON (schema: docs/doctor.md).", default=False, flag="--json"
    )
    data: str | Path | None = option(
        SECTION, "Dataset to open and time reading.", default=None, kind=str, metavar="PATH"
    )  # a folder, an archive or a URL
    outdir: Path = option(SECTION, "Where runs go: disk checked here.", default=Path("."))
    quick: bool = option(SECTION, "Shorter benchmarks (seconds instead of tens of seconds).", default=False)
    precision: str = option(
        SECTION,
        "Precision of the tiny StyleGAN2 check: the one you will train with (auto: what train's auto picks here).",
        default=AUTO_PRECISION,
        choices=(*PRECISIONS, AUTO_PRECISION),
    )

    def __post_init__(self):
        refuse_bad_values(DOCTOR_OPTIONS, self)

    def settings(self) -> dict:
        """The values the checks ran with, as the report records them (not how it is printed)."""
        return {name: value for name, value in dataclasses.asdict(self).items() if name != "as_json"}


# Every option of `ganforge doctor`, in the order of its fields.
DOCTOR_OPTIONS = declared(Options)
