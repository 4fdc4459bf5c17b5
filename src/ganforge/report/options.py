"""The options of `ganforge report`, each declared on the field it sets (`ganforge.option`): where the page goes and,
with `--to`, the experiment tracker the run is uploaded to (as `train --tracker` would have sent it). The command's
click options are derived from the declarations."""

import dataclasses
from pathlib import Path

from ganforge.config.sections import TRACKER_ARTIFACTS, TRACKERS
from ganforge.errors import UserError
from ganforge.option import declared, option, refuse_bad_values

SECTION = "Options"  # the one heading of `ganforge report --help`


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """Where the page of the runs is written (`out`; None: `default_out`), and the tracker (`tracker`, None: none)
    that one run is also uploaded to, with its server, project, run name and which artifacts go with it."""

    out: Path | None = option(
        SECTION,
        "Page to write.",
        default=None,
        file=True,
        shown_default="RUN/report.html; with several runs, report.html here",
    )
    tracker: str | None = option(
        SECTION,
        "Also upload the run (its config, ticks, metrics, sample grids, alerts and this page) to an experiment "
        "tracker, as `train --tracker` would have sent it: for runs that trained where no tracker could be reached.",
        default=None,
        flag="--to",
        choices=TRACKERS,
    )
    tracker_uri: str | None = option(
        SECTION, "With --to: the tracker's server, as `train --tracker-uri`.", default=None, metavar="URI"
    )
    tracker_project: str | None = option(
        SECTION, "With --to: MLflow experiment or W&B project.", default=None, metavar="NAME"
    )
    tracker_run_name: str | None = option(
        SECTION, "With --to: the run's name.", default=None, metavar="NAME", shown_default="the folder's name"
    )
    tracker_artifacts: str = option(
        SECTION,
        "With --to: also upload the snapshots, or the snapshots and checkpoints.",
        default="none",
        choices=TRACKER_ARTIFACTS,
    )

    def __post_init__(self):
        refuse_bad_values(REPORT_OPTIONS, self)

    def check_upload(self, runs: list[Path]) -> None:
        """An upload (`--to`) takes one run folder, whose page is its RUN/report.html."""
        if self.tracker is not None and (len(runs) != 1 or self.out is not None):
            raise UserError(
                f"--to {self.tracker}: uploads one run folder, with its RUN/report.html; pass one RUN, no --out"
            )


# Every option of `ganforge report`, in the order of its fields.
REPORT_OPTIONS = declared(ReportOptions)
