"""`ganforge report`: a run (or several, overlaid) as one self-contained HTML page.

    from ganforge.report import write_report
    write_report("runs/00000-ffhq-auto-gpus1-batch32")                  # -> runs/00000-.../report.html
    write_report(["runs/00000-a", "runs/00001-b"], out="compare.html")  # curves of both runs overlaid

Needs matplotlib (`pip install 'ganforge[report]'`); `refresh_report` is the variant for the training loop, which
never fails a run for a missing extra.
"""

from pathlib import Path

from ganforge.durable import WriteError, check_destination, replace_file, shorten
from ganforge.errors import UserError
from ganforge.outputs import check_writable_folder
from ganforge.report.figures import INSTALL, require_matplotlib

REPORT_NAME = "report.html"


def default_out(run_dirs: list[Path]) -> Path:
    """RUN/report.html for one run; report.html in the current folder for a comparison of several."""
    return run_dirs[0] / REPORT_NAME if len(run_dirs) == 1 else Path(REPORT_NAME)


def write_report(run_dirs, out=None) -> Path:
    """Read the run folder(s), write the page (atomically: an open page is never half-written) and return its path.
    `run_dirs` is one path or a list; UserError for a folder that is not a run or when matplotlib is missing."""
    from ganforge.report.page import render
    from ganforge.report.rundata import check_run_folder, read_run

    run_dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(p) for p in run_dirs]
    if not run_dirs:
        raise UserError("RUN: name at least one run folder")
    for path in run_dirs:
        check_run_folder(path)
    out = Path(out) if out is not None else default_out(run_dirs)
    check_destination(out)  # before the work: a device, FIFO, folder or link there is never replaced
    if not out.parent.is_dir():
        why = "is not a folder" if out.parent.exists() else "does not exist"
        raise WriteError(f"{shorten(out)}: cannot write: its folder {why}; choose another path")
    check_writable_folder(out.parent, "--out")
    require_matplotlib()
    runs = [read_run(path) for path in run_dirs]
    replace_file(out, render(runs).encode("utf-8"))
    return out


def refresh_report(run_dir) -> str:
    """Rewrite RUN/report.html when the report extra is installed; returns the line for the training log."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"{REPORT_NAME} not written: it needs matplotlib ({INSTALL})"
    try:
        return f"report {write_report(run_dir)}"
    except UserError as error:  # a report is never worth the run: say why and train on
        return f"{REPORT_NAME} not written: {error}"
