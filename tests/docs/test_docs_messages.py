"""The messages the pages quote (the `warning:` and `error:` lines of their `text` blocks, which need a GPU, a long
run or a failing machine to print) are ganforge's own: each is covered by the message texts in src/ganforge, where
a value a message puts in (an f-string's `{...}`) matches any short text and the page's placeholders (`N`, `X`,
`...`) stand for such values. A message reworded in the code and not on the page fails here, naming page and line."""

import ast
import re
import string
from functools import cache

import pytest
from doc_blocks import ROOT, blocks, pages

QUOTED = re.compile(r"^(warning|error): .+$")
VALUE = ".{1,80}?"  # what one `{...}` of an f-string puts in a message
SHORTEST = 12  # literal characters a template needs to count (shorter ones match too much by chance)
COVERED = 0.9  # the share of a quoted message that ganforge's templates must account for


def _parts(node: ast.AST) -> list[str | None]:
    """A string literal's or f-string's pieces: literal text, or None for a value put in (`{...}`, also the fields of
    a plain string that `.format` fills); [] for other nodes."""
    if isinstance(node, ast.JoinedStr):
        return [value.value if isinstance(value, ast.Constant) else None for value in node.values]
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return []
    try:
        fields = list(string.Formatter().parse(node.value))
    except ValueError:  # braces that are not format fields
        return [node.value]
    return [piece for text, field, _, _ in fields for piece in (text, None if field is not None else "")]


def _template(node: ast.AST) -> tuple[str, int] | None:
    """A regex of a string literal or f-string, and its literal length; None for other nodes."""
    parts = [part for part in _parts(node) if part != ""]
    while parts and parts[0] is None:  # a template never starts or ends in a value
        parts.pop(0)
    while parts and parts[-1] is None:
        parts.pop()
    if not parts:
        return None
    regex = "".join(VALUE if part is None else re.escape(part) for part in parts)
    return regex, sum(len(part) for part in parts if part is not None)


@cache
def _templates() -> tuple[re.Pattern, ...]:
    found = set()
    for path in (ROOT / "src" / "ganforge").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            template = _template(node)
            if template and template[1] >= SHORTEST:
                found.add(template[0])
    return tuple(re.compile(regex) for regex in found)


def _covered_share(message: str) -> float:
    """The share of the message's characters inside a match of some template (placeholders and the `warning: ` or
    `error: ` that the printing adds count as covered)."""
    covered = [False] * len(message)
    prefix = message.index(": ") + 2
    covered[:prefix] = [True] * prefix
    for placeholder in re.finditer(r"\bN\b|\bX\b|\.\.\.", message):
        covered[placeholder.start() : placeholder.end()] = [True] * (placeholder.end() - placeholder.start())
    for template in _templates():
        for match in template.finditer(message):
            covered[match.start() : match.end()] = [True] * (match.end() - match.start())
    return sum(covered) / len(message)


QUOTES = [
    (f"{block.page}:{block.line + offset}", line)
    for page in pages()
    for block in blocks(page)
    if block.language == "text"
    for offset, line in enumerate(block.lines, 1)
    if QUOTED.match(line)
]


def test_the_pages_quote_messages():
    assert len(QUOTES) >= 10


@pytest.mark.parametrize("where, message", QUOTES, ids=[where for where, _ in QUOTES])
def test_a_quoted_message_is_one_ganforge_prints(where, message):
    share = _covered_share(message)
    assert share >= COVERED, f"{where}: only {share:.0%} of the quoted message is in ganforge's messages: {message}"


def test_a_message_ganforge_does_not_print_is_caught():
    assert _covered_share("warning: the GPU is on fire: pour water on it and call the fire brigade") < 0.5
    reworded = "error: data loader: no batch from the workers for 600 s; the storage is too slow. Copy it elsewhere"
    assert _covered_share(reworded) < COVERED
    printed = (
        "error: data loader: no batch from the workers for 600 s; the dataset storage is too slow or a worker hung. "
    )
    assert _covered_share(printed + "Copy the dataset to local disk, or use fewer --workers") >= COVERED
