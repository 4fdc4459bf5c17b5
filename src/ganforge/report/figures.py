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
LEGEND_CHARS = 90  # legend entries side by side fit this many characters at its font size (a 6-inch figure)
LEVEL_COLOR = "0.35"
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


def _legend_columns(labels: list[str], several_runs: bool) -> int:
    """Entries side by side: up to 3 (several runs) or 4, fewer where long labels (a metric's images) would not fit."""
    longest = max(len(label) for label in labels)
    return max(1, min(len(labels), 3 if several_runs else 4, LEGEND_CHARS // longest))


def svg_data_uri(plot: Plot, several_runs: bool) -> str:
    """The figure of `plot` as a `data:image/svg+xml;base64,...` URI (text kept as text, fixed ids: small and
    the same bytes for the same data)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 3.4), layout="constrained")
    axes = figure.subplots()
    styles = _styles(plot, several_runs)
    for (_, curve), style in zip(plot.curves, styles, strict=True):
        marker = "o" if len(curve.kimg) < MARKERS_BELOW or curve.reduced else None
        hollow = {"markerfacecolor": "none"} if curve.reduced else {}
        axes.plot(curve.kimg, curve.values, linewidth=1.2, marker=marker, markersize=3, **hollow, **style)
    for label, y in plot.levels:
        axes.axhline(y, color=LEVEL_COLOR, linestyle="--", linewidth=1.0, label=label)
    if plot.log_y and all(v > 0 for _, curve in plot.curves for v in curve.values):
        axes.set_yscale("log")
    axes.set_title(plot.title, fontsize=10)
    axes.set_xlabel("kimg", fontsize=8)
    axes.set_ylabel(plot.unit, fontsize=8)
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    figure.legend(
        loc="outside lower center",
        ncols=_legend_columns([s["label"] for s in styles] + [label for label, _ in plot.levels], several_runs),
        fontsize=7,
        frameon=False,
    )
    buffer = io.BytesIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "ganforge"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
