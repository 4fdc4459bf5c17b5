"""docs/watching.md's table of the statistics of a tick, generated from `ganforge.stat_names` (the names the phases,
the loop and the monitor write, with what each means) at every docs build, in place of the marker."""

from page_marker import replace_marker

from ganforge import stat_names

MARKER = "<!-- generated: the statistics of a tick -->"
PAGE = "watching.md"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """mkdocs' hook: the table in place of the marker on the watching page; other pages as they are."""
    return replace_marker(markdown, page, PAGE, MARKER, stat_names.markdown)
