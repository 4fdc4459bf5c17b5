"""Every figure the README gives names the machine it was measured on and the date: a user whose machine is slower
(or busier) must be able to tell a figure from elsewhere from a promise."""

import re
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"
DATE = re.compile(r"20\d\d-\d\d(-\d\d)?")


def _figures_table() -> list[list[str]]:
    text = README.read_text()
    section = text.split("\n## Figures\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header, _, *body = ([cell.strip() for cell in row.strip("|").split("|")] for row in rows)
    assert header == ["what", "figure", "machine", "date"], header
    return body


def test_each_figure_names_its_machine_and_date():
    rows = _figures_table()
    assert len(rows) >= 3
    for what, figure, machine, date in rows:
        assert figure and re.search(r"\d", figure), what
        assert re.search(r"core|GPU|H100|H200|A100|VM|CPU", machine), f"{what}: machine {machine!r}"
        assert DATE.fullmatch(date), f"{what}: date {date!r}"
