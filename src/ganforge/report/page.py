"""The report as one self-contained HTML page: inline CSS, figures and images as data URIs, no script, no link to
anything outside the file, so it opens offline in any browser and can be mailed or archived as it is.

Sections (their ids): summary, curves, samples, config, labels (the training data's label distribution),
environment, alerts, profile, files. With several runs the curves are overlaid and the other sections hold one part
per run. The only links are to the page itself: from the summary to each run's profile (`train --profile`'s
summary.txt, embedded).
"""

import html
import time

from ganforge import __version__
from ganforge.report import images, tables
from ganforge.report.curves import MAX_POINTS, Plot, ResultTable, plots
from ganforge.report.figures import svg_data_uri
from ganforge.report.labels import label_view
from ganforge.report.rundata import Run, name_runs

SECTIONS = ("summary", "curves", "samples", "config", "labels", "environment", "alerts", "profile", "files")

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .7em; border-bottom: 1px solid #eee;
  text-align: left; vertical-align: top; font-variant-numeric: tabular-nums; }
td.key { color: #555; white-space: nowrap; } .note { color: #666; font-size: .9em; }
.status { font-weight: 600; padding: .1em .5em; border-radius: .3em; background: #eee; }
.running { background: #d7ecff; } .finished { background: #d9f2d9; }
.preempted, .stopped, .pruned { background: #fff1c2; }
.diverged, .failed, .stalled { background: #ffd6d6; }
figure { margin: 1em 0; } .plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr));
  gap: .3em 1em; } .plots figure { margin: 0; } img.plot { width: 100%; }
.grids { display: flex; flex-wrap: wrap; gap: .8em; align-items: flex-end; }
.grids figure { margin: 0; } .grids figcaption { font-size: .85em; color: #555; }
img.grid { image-rendering: pixelated; }
.reduced { color: #8a4500; } figcaption.note { margin: 0 0 .6em; }
.results figcaption { font-size: .85em; font-weight: 600; text-align: center; margin-top: .6em; }
td.bar { width: 240px; } td.bar span { display: block; height: .8em; margin-top: .3em; background: #6a9bd1; }
pre.profile { font-size: .8em; overflow-x: auto; background: #f7f7f7; padding: .6em; }
"""


def _e(text) -> str:
    return html.escape(str(text))


def _table(headers: list[str], rows: list, key_column: bool = False) -> str:
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    first = '<td class="key">' if key_column else "<td>"
    body = "".join(
        f"<tr>{first}{_e(row[0])}</td>" + "".join(f"<td>{_e(v)}</td>" for v in row[1:]) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{section_id}"><h2>{_e(title)}</h2>{body}</section>'


def _per_run(runs: list[Run], part) -> str:
    """`part(run)` under a heading per run when there are several."""
    return _per_run_indexed(runs, lambda run, _: part(run))


def _per_run_indexed(runs: list[Run], part) -> str:
    """`part(run, index)` under a heading per run when there are several."""
    if len(runs) == 1:
        return part(runs[0], 0)
    return "".join(f"<h3>{_e(run.heading)}</h3>{part(run, index)}" for index, run in enumerate(runs))


def _best(run: Run) -> str:
    """The best value of each metric result, one per line, each with its images; a value not on its metric's full
    protocol says so and is set apart."""
    lines = [
        f"<span>{_e(text)}</span>" if full else f'<span class="reduced">{_e(text)}</span>'
        for text, full in tables.best_lines(run)
    ]
    return "<br>".join(lines) or "-"


def _profile_link(run: Run, index: int) -> str:
    return f'<a href="#profile-{index}">summary</a>' if run.profile is not None else "-"


def _summary(runs: list[Run]) -> str:
    keys = ["status", "dataset", "preset", "kimg", "img/s", "ETA"]
    rows = ""
    for index, run in enumerate(runs):
        facts = tables.summary(run)
        cells = f'<td><span class="status {_e(facts["status"])}" title="{_e(run.status.detail)}">'
        cells += f"{_e(facts['status'])}</span></td>" + "".join(f"<td>{_e(facts[k])}</td>" for k in keys[1:])
        cells += f"<td>{_best(run)}</td><td>{_profile_link(run, index)}</td>"
        rows += f"<tr><td>{_e(run.heading)}</td>{cells}</tr>"
    head = "".join(f"<th>{_e(k)}</th>" for k in ["run", *keys, "best (images used)", "profile"])
    unread = "line(s) of stats.jsonl could not be read (a record being written, or a damaged file)"
    notes = "".join(
        f'<p class="note">{_e(run.heading)}: {run.unreadable_stats} {unread}</p>'
        for run in runs
        if run.unreadable_stats
    )
    return _section("summary", "Summary", f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}")


def _figure(plot: Plot, several_runs: bool) -> str:
    """A figure; the images behind its metric curves under it and in its tooltip."""
    tip = " | ".join([plot.title, *plot.notes])
    caption = "<br>".join(_e(note) for note in plot.notes)
    caption = f'<figcaption class="note">{caption}</figcaption>' if caption else ""
    uri = svg_data_uri(plot, several_runs)
    return f'<figure><img class="plot" alt="{_e(plot.title)}" title="{_e(tip)}" src="{uri}">{caption}</figure>'


def _result_table(table: ResultTable, several_runs: bool) -> str:
    """A metric with one result per curve: its value, kimg and images in a table where its figure would be."""
    headers = ["result", "kimg", "value", "images"]
    rows = [row[1:] for row in table.rows]
    if several_runs:
        headers, rows = ["run", *headers], table.rows
    return f'<figure class="results"><figcaption>{_e(table.title)}</figcaption>{_table(headers, rows)}</figure>'


def _curves(runs: list[Run]) -> str:
    several = len(runs) > 1
    figures = [
        _figure(item, several) if isinstance(item, Plot) else _result_table(item, several) for item in plots(runs)
    ]
    note = (
        f'<p class="note">Over kimg; long curves are reduced to {MAX_POINTS} points (means of consecutive ticks). '
        "Each metric value names the images it was computed on; one not on its metric's full protocol (its name's "
        "count of fakes, against every real image for a _full metric) is marked.</p>"
    )
    body = f'<div class="plots">{"".join(figures)}</div>' if figures else '<p class="note">no ticks yet</p>'
    return _section("curves", "Training curves", note + body)


def _grid_figure(path, caption: str, newest: bool = False) -> str:
    """A grid with its caption; small grids are shown enlarged (up to 4x, pixels kept sharp). Empty for a grid that
    cannot be shown (warned about)."""
    shown = images.grid_data_uri(path, images.NEWEST_WIDTH if newest else images.THUMB_WIDTH)
    if shown is None:
        return ""
    uri, width = shown
    size = min(4 * width, 900) if newest else 200
    return (
        f'<figure><img class="grid" style="width: min(100%, {size}px)" alt="{_e(caption)}" src="{uri}">'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _samples(run: Run) -> str:
    """The newest grid large, older ones (and the reals) as thumbnails."""
    shown = images.pick_grids(run.fakes)[::-1]  # newest first
    if not shown:
        return '<p class="note">no grids yet</p>'
    (kimg, path), older = shown[0], shown[1:]
    thumbs = [_grid_figure(p, f"{p.name}: {k:g} kimg") for k, p in older]
    if run.reals is not None:
        thumbs.append(_grid_figure(run.reals, "reals.png"))
    note = f'<p class="note">{len(shown)} of {len(run.fakes)} grids</p>' if len(shown) < len(run.fakes) else ""
    newest = _grid_figure(path, f"{path.name}: {kimg:g} kimg", newest=True)
    return f'{note}{newest}<div class="grids">{"".join(thumbs)}</div>'


def _config(run: Run) -> str:
    derived = "".join(f"<li>{_e(line)}</li>" for line in tables.derived_lines(run))
    derived = f"<p>Derived from the preset and flags:</p><ul>{derived}</ul>" if derived else ""
    return derived + _table(["field", "value"], tables.config_rows(run), key_column=True)


def _labels(run: Run) -> str:
    """The label distribution: a headline, then a table, counts drawn as bars (plain HTML, so that any class name
    shows as the data spells it, and 50 rows read as easily as 3)."""
    view = label_view(run)
    notes = "".join(f'<p class="note">{_e(note)}</p>' for note in view.notes)
    if not view.headers:
        return f'<p class="note">{_e(view.headline)}</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in view.headers) + ("<th></th>" if view.bars else "")
    bars = [f'<td class="bar"><span style="width: {100 * bar:.1f}%"></span></td>' for bar in view.bars]
    body = "".join(
        f'<tr><td class="key">{_e(row[0])}</td>' + "".join(f"<td>{_e(v)}</td>" for v in row[1:]) + bar + "</tr>"
        for row, bar in zip(view.rows, bars or [""] * len(view.rows), strict=True)
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" if body else ""
    return f"<p>{_e(view.headline)}</p>{table}{notes}"


def _environment(run: Run) -> str:
    return _table(["field", "value"], tables.env_rows(run), key_column=True)


def _files(run: Run) -> str:
    return _table(["kind", "name", "kimg", "size"], tables.file_rows(run))


def _alerts(run: Run) -> str:
    return (
        _table(["kimg", "alert"], tables.alerts(run)) + "<p>Skipped optimiser steps (non-finite loss or "
        "gradient):</p>" + _table(["kimg", "phase", "steps"], tables.skipped_steps(run))
    )


def _profile(run: Run, index: int) -> str:
    if run.profile is None:
        return (
            f'<p class="note" id="profile-{index}">not profiled (<code>ganforge train --profile STEPS</code> writes '
            "profile/summary.txt)</p>"
        )
    where = (
        f'<p class="note">{_e(run.name)}/profile/summary.txt; the Chrome trace beside it opens in Perfetto or '
        "TensorBoard's profiler view.</p>"
    )
    return f'{where}<pre class="profile" id="profile-{index}">{_e(run.profile)}</pre>'


def render(runs: list[Run]) -> str:
    """The whole page for one run or several."""
    runs = name_runs(runs)
    title = runs[0].heading if len(runs) == 1 else f"{len(runs)} runs compared"
    body = [
        _summary(runs),
        _curves(runs),
        _section("samples", "Samples (fixed latents, newest first)", _per_run(runs, _samples)),
        _section("config", "Resolved configuration", _per_run(runs, _config)),
        _section("labels", "Training labels", _per_run(runs, _labels)),
        _section("environment", "Environment", _per_run(runs, _environment)),
        _section("alerts", "Alerts and skipped steps", _per_run(runs, _alerts)),
        _section("profile", "Profile (train --profile)", _per_run_indexed(runs, _profile)),
        _section("files", "Checkpoints and snapshots", _per_run(runs, _files)),
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    footer = f'<p class="note">Written by ganforge {_e(__version__)} at {_e(stamp)}.</p>'
    head = f'<meta charset="utf-8"><title>{_e(title)} - ganforge report</title><style>{_CSS}</style>'
    page = f"<h1>{_e(title)}</h1>{''.join(body)}{footer}"
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>{page}</body></html>\n'
