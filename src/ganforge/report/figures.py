"""Drawing the report's figures with matplotlib as SVG data URIs (the Figure API, not pyplot: no global state).

One run: one colour per curve. Several runs: one colour per run and one line style per quantity, so the same
quantity of two runs is told apart by colour, as a comparison needs.
"""

import base64
import io

from ganforge.errors import UserError
from ganforge.report.curves import Plot

LINE_STYLES = ("-", "--", ":", "-.")
MARKERS_BELOW = 40  # curves with fewer points get markers, so that a run with one or two ticks still shows up
INSTALL = "pip install 'ganforge[report]'"


def require_matplotlib() -> None:
    """UserError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError(f"ganforge report needs matplotlib: {INSTALL}") from None


def _styles(plot: Plot, several_runs: bool) -> list[dict]:
    from matplotlib import rcParams

    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    runs = list(dict.fromkeys(run for run, _ in plot.curves))
    labels = list(dict.fromkeys(curve.label for _, curve in plot.curves))
    styles = []
    for run, curve in plot.curves:
        r, k = runs.index(run), labels.index(curve.label)
        if several_runs:
            label = f"{run}: {curve.label}" if len(labels) > 1 else run
            styles.append(
                {"color": colors[r % len(colors)], "linestyle": LINE_STYLES[k % len(LINE_STYLES)], "label": label}
            )
        else:
            styles.append({"color": colors[k % len(colors)], "linestyle": "-", "label": curve.label})
    return styles


def svg_data_uri(plot: Plot, several_runs: bool) -> str:
    """The figure of `plot` as a `data:image/svg+xml;base64,...` URI (text kept as text, fixed ids: small and
    the same bytes for the same data)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 3.4), layout="constrained")
    axes = figure.subplots()
    for (_, curve), style in zip(plot.curves, _styles(plot, several_runs), strict=True):
        marker = "o" if len(curve.kimg) < MARKERS_BELOW else None
        axes.plot(curve.kimg, curve.values, linewidth=1.2, marker=marker, markersize=3, **style)
    if plot.log_y and all(v > 0 for _, curve in plot.curves for v in curve.values):
        axes.set_yscale("log")
    axes.set_title(plot.title, fontsize=10)
    axes.set_xlabel("kimg", fontsize=8)
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    columns = min(len(plot.curves), 3 if several_runs else 4)
    figure.legend(loc="outside lower center", ncols=columns, fontsize=7, frameon=False)
    buffer = io.BytesIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "ganforge"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
