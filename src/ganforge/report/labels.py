"""The label distribution of a run's training data as the report shows it, from the run folder's labels.json
(written at the start of a run, in the form ganforge.data.distribution describes).

labels.json is read as any JSON (rundata bounds its size and depth): an entry that is not what train writes (a count
that is not a whole number of images, statistics that are not finite numbers) is left out and counted, and names are
cut to MAX_NAME_CHARS. A long list shows MAX_ROWS rows: the largest classes (the rare ones are named in the headline),
or the first entries of a label vector.
"""

import dataclasses
from dataclasses import dataclass, field

from ganforge.durable import shorten
from ganforge.report.rundata import Run, number

MAX_ROWS = 50
MAX_NAME_CHARS = 100
STATISTICS = ("min", "mean", "max", "std")


@dataclass(frozen=True)
class Labels:
    """A headline saying what the labels are; a table (headers and rows, each row's bar: its count over the largest
    shown, none for statistics); notes on rows not shown and entries left out."""

    headline: str
    headers: tuple[str, ...] = ()
    rows: list[tuple[str, ...]] = field(default_factory=list)
    bars: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def label_view(run: Run) -> Labels:
    """What the page shows of the run's labels.json."""
    value = run.labels
    if value is None:
        return Labels("not recorded (the run folder has no readable labels.json)")
    kind = value.get("kind")
    if kind == "none":
        return Labels("unconditional data: no labels")
    if kind == "classes" and isinstance(value.get("counts"), dict):
        view = _classes(value["counts"])
    elif kind == "vectors" and isinstance(value.get("columns"), dict):
        view = _multi_hot(value["columns"]) if value.get("multi_hot") is True else _continuous(value["columns"])
    else:
        return Labels("labels.json is not a label distribution; left out")
    if _data(run).get("cond") is False:
        unused = "This run trains without them (no --cond): its networks do not see the labels."
        view = dataclasses.replace(view, notes=[*view.notes, unused])
    return view


def _data(run: Run) -> dict:
    data = run.config.get("data") if isinstance(run.config, dict) else None
    return data if isinstance(data, dict) else {}


def _count(value) -> int | None:
    """`value` as a number of images (a whole number, not negative), else None."""
    n = number(value)
    return int(n) if n is not None and n >= 0 and n.is_integer() else None


def _name(name: str) -> str:
    return shorten(name, MAX_NAME_CHARS)


def _percent(fraction: float | None) -> str:
    return f"{100 * fraction:.1f}%" if fraction is not None and 0 <= fraction <= 1 else "-"


def _left_out(what: str, shown: int, total: int, skipped: int, kept: str) -> list[str]:
    """Notes on the rows not shown (`kept`: which are) and the entries that are not what train writes."""
    notes = [f"... {total - shown:,} more {what} ({kept} shown)"] if total > shown else []
    if skipped:
        notes.append(f"{skipped:,} entries of labels.json are not what train writes; left out")
    return notes


def _counted(headline: str, headers: tuple, items: list[tuple[str, int, str]], what: str, skipped: int) -> Labels:
    """A table of (name, images, share) with a bar each: in the data's order, or the MAX_ROWS largest of more."""
    shown = items if len(items) <= MAX_ROWS else sorted(items, key=lambda item: -item[1])[:MAX_ROWS]
    largest = max((n for _, n, _ in shown), default=0)
    rows = [(_name(name), f"{n:,}", share) for name, n, share in shown]
    bars = [n / largest if largest else 0.0 for _, n, _ in shown]
    notes = _left_out(what, len(shown), len(items), skipped, f"the {len(shown)} largest")
    return Labels(headline, headers, rows, bars, notes)


def _classes(counts: dict) -> Labels:
    found = [(name, n) for name, value in counts.items() if (n := _count(value)) is not None]
    total = sum(n for _, n in found)
    headline = f"{len(found):,} classes, {total:,} images"
    if found:  # the rarest class matters most to a conditional run, and a long table may not show it
        (small, n_small), (large, n_large) = min(found, key=lambda i: i[1]), max(found, key=lambda i: i[1])
        headline += f"; smallest {_name(small)} ({n_small:,}), largest {_name(large)} ({n_large:,})"
    items = [(name, n, _percent(n / total if total else None)) for name, n in found]
    return _counted(headline, ("class", "images", "share"), items, "classes", len(counts) - len(found))


def _multi_hot(columns: dict) -> Labels:
    """Images carrying each label; the share of images that do is the mean of its 0/1 entry."""
    items = [
        (name, n, _percent(number(stats.get("mean"))))
        for name, stats in columns.items()
        if isinstance(stats, dict) and (n := _count(stats.get("nonzero"))) is not None
    ]
    headline = f"multi-hot label vectors: {len(items):,} labels, each image carrying any number of them"
    headers = ("label", "images carrying it", "share")
    return _counted(headline, headers, items, "labels", len(columns) - len(items))


def _continuous(columns: dict) -> Labels:
    rows = []
    for name, stats in columns.items():
        values = [number(stats.get(key)) for key in STATISTICS] if isinstance(stats, dict) else [None]
        if None not in values:
            rows.append((_name(name), *(f"{v:.4g}" for v in values)))
    notes = _left_out("entries", min(len(rows), MAX_ROWS), len(rows), len(columns) - len(rows), f"the first {MAX_ROWS}")
    headline = f"continuous label vectors: {len(rows):,} entries"
    return Labels(headline, ("entry", *STATISTICS), rows[:MAX_ROWS], [], notes)
