"""What each docs hook here does: on its one page, text generated from the code in place of the page's marker.
mkdocs puts this folder on the import path while it loads a hook (tests/docs loads them the same way)."""


def replace_marker(markdown: str, page, name: str, marker: str, generate) -> str:
    """`markdown` with `generate()` in place of `marker` when it is page `name` (which must hold the marker); other
    pages as they are."""
    if page.file.src_uri != name:
        return markdown
    assert marker in markdown, f"{name} lost its marker {marker}"
    return markdown.replace(marker, generate())
