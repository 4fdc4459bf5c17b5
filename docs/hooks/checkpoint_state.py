"""docs/architecture.md's list of what a checkpoint's state holds, generated from `ganforge.checkpoint.layout` (the
entries that training captures and restores and the validator checks) at every docs build, in place of the marker."""

from page_marker import replace_marker

from ganforge.checkpoint import layout

MARKER = "<!-- generated: the checkpoint state -->"
PAGE = "architecture.md"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """mkdocs' hook: the list in place of the marker on the architecture page; other pages as they are."""
    return replace_marker(markdown, page, PAGE, MARKER, layout.markdown)
