"""The sweep report, DIR/report.html: one self-contained page (as the run report: inline CSS and figures) with the
study, the best trial as a ready `ganforge train` command, every trial's settings, state and metric curve, and the
parameters' importances. Each trial's own run report is linked by its relative path."""

import json
import os
import time
from pathlib import Path

from ganforge import __version__
from ganforge.durable import check_destination, replace_file
from ganforge.errors import UserError
from ganforge.report import REPORT_NAME
from ganforge.report.curves import Curve, Plot
from ganforge.report.figures import require_matplotlib, svg_data_uri
from ganforge.report.page import _CSS, _e, _section, _table
from ganforge.sweep.record import RECORD, SNAPSHOT, TRIALS, read_snapshot, write_snapshot
from ganforge.sweep.trial import run_folder

# The run report's status colours for Optuna's trial states.
STATE_STYLE = {"complete": "finished", "fail": "failed", "pruned": "pruned", "running": "running", "waiting": "stopped"}
MAX_RECORD_BYTES = 64 * 2**20  # a study of 10^5 trials with their curves stays far below


def is_sweep(folder: Path) -> bool:
    return (Path(folder) / RECORD).is_file()


def write_sweep_report(outdir: Path, study=None, options=None, space=None, out: Path | None = None) -> Path:
    """Write the page (from the storage when `study` is given, else from DIR/study.json) and return its path."""
    require_matplotlib()
    outdir = Path(outdir)
    snapshot = write_snapshot(outdir, study, options, space) if study is not None else _read(outdir)
    out = Path(out) if out is not None else outdir / REPORT_NAME
    check_destination(out)  # a device, FIFO, folder or link there is never replaced
    try:
        page = render(_read_json(outdir / RECORD), snapshot, outdir, out.parent)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UserError(
            f"{outdir}: its {RECORD} or study.json is not a ganforge sweep's ({error}); rerun the sweep"
        ) from None
    replace_file(out, page.encode("utf-8"))
    return out


def _read_json(path: Path) -> dict:
    if not path.is_file() or path.stat().st_size > MAX_RECORD_BYTES:
        raise UserError(f"{path}: missing or larger than {MAX_RECORD_BYTES >> 20} MiB; rerun the sweep to rewrite it")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not valid JSON ({error}); rerun the sweep to rewrite it") from None
    if not isinstance(found, dict):
        raise UserError(f"{path}: not a JSON object; rerun the sweep to rewrite it")
    return found


def _read(outdir: Path) -> dict:
    _read_json(outdir / SNAPSHOT)
    return read_snapshot(outdir)


def _summary(record: dict, snapshot: dict) -> str:
    states = {}
    for trial in snapshot["trials"]:
        states[trial["state"]] = states.get(trial["state"], 0) + 1
    rows = [
        ["study", record["study"]],
        ["storage", record["storage"]],
        ["metric", f"{record['metric']} ({'higher' if record['direction'] == 'maximize' else 'lower'} is better)"],
        ["trials", ", ".join(f"{count} {state}" for state, count in sorted(states.items())) or "none yet"],
        ["space", "  ".join(record["space"])],
        ["as of", snapshot["written"]],
    ]
    best = snapshot["best"]
    if best is None:
        return _section("summary", "Study", _table(["", ""], rows, key_column=True) + "<p>No trial finished yet.</p>")
    command = f"<p>Best: trial {best['number']}, {_e(record['metric'])} = {best['value']:.4g}. To train with it:</p>"
    return _section("summary", "Study", _table(["", ""], rows, key_column=True) + command
                    + f'<pre class="profile" id="best">{_e(best["command"])}</pre>')  # fmt: skip


def _trial_row(t: dict, outdir: Path, page_dir: Path) -> str:
    settings = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in t["params"].items())
    value = "" if t["value"] is None else f"{t['value']:.4g}"
    state = f'<span class="status {STATE_STYLE.get(t["state"], "")}">{_e(t["state"])}</span>'
    cells = [_e(t["number"]), state, value, _e(settings), _e(t["attrs"].get("note", "")),
             _run_link(t, outdir, page_dir)]  # fmt: skip
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _trials(snapshot: dict, outdir: Path, page_dir: Path) -> str:
    head = "<tr><th>trial</th><th>state</th><th>value</th><th>settings</th><th>note</th><th>run</th></tr>"
    rows = "".join(_trial_row(t, outdir, page_dir) for t in snapshot["trials"])
    return _section("trials", "Trials", f"<table><thead>{head}</thead><tbody>{rows}</tbody></table>")


def _run_link(trial: dict, outdir: Path, page_dir: Path) -> str:
    """The trial's run folder, linked to its report.html where it has one."""
    folder = str(trial["attrs"].get("folder", ""))
    run = run_folder(outdir / TRIALS / folder) if folder.isalnum() else None
    if run is None:
        return ""
    name = _e(run.relative_to(outdir).as_posix())
    if not (run / REPORT_NAME).is_file():
        return name
    return f'<a href="{_e(Path(os.path.relpath(run / REPORT_NAME, page_dir)).as_posix())}">{name}</a>'


def _trial_curve(trial: dict) -> Curve:
    """A trial's measurements (kimg, value), those that are numbers."""
    points = [(step / 1000, value) for step, value in trial["curve"] if value is not None]
    return Curve(f"trial {trial['number']}", [kimg for kimg, _ in points], [value for _, value in points])


def _curves(record: dict, snapshot: dict) -> str:
    curves = [(f"trial {t['number']} ({t['state']})", _trial_curve(t)) for t in snapshot["trials"]]
    curves = [(label, curve) for label, curve in curves if curve.values]
    if not curves:
        return _section("curves", "Metric at each snapshot", '<p class="note">no measurement yet</p>')
    plot = Plot(f"{record['metric']} of each trial", curves, unit=record["metric"])
    figure = f'<figure><img class="plot" alt="{_e(plot.title)}" src="{svg_data_uri(plot, True)}"></figure>'
    return _section("curves", "Metric at each snapshot", figure)


def _importances(snapshot: dict) -> str:
    found = snapshot["importances"]
    if isinstance(found, str):
        return _section("importances", "Parameter importances", f'<p class="note">{_e(found)}</p>')
    rows = "".join(f'<tr><td class="key">{_e(name)}</td><td>{share:.3f}</td><td class="bar"><span style="width: '
                   f'{100 * share:.0f}%"></span></td></tr>' for name, share in found.items())  # fmt: skip
    note = '<p class="note">Share of the metric\'s variance over the finished trials (fANOVA).</p>'
    return _section("importances", "Parameter importances", f"<table><tbody>{rows}</tbody></table>{note}")


def render(record: dict, snapshot: dict, outdir: Path, page_dir: Path) -> str:
    title = f"Sweep {record['study']}"
    body = [_summary(record, snapshot), _curves(record, snapshot), _trials(snapshot, outdir, page_dir),
            _importances(snapshot)]  # fmt: skip
    footer = (
        f'<p class="note">Written by ganforge {_e(__version__)} at {_e(time.strftime("%Y-%m-%d %H:%M:%S %Z"))}.</p>'
    )
    head = f'<meta charset="utf-8"><title>{_e(title)} - ganforge sweep report</title><style>{_CSS}</style>'
    page = f"<h1>{_e(title)}</h1>{''.join(body)}{footer}"
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>{page}</body></html>\n'
