"""The fenced blocks of the docs' Markdown pages: their language, where they are, what a `console` block runs and
what it shows, and the marker of a block that is not run.

A console block holds commands (`$ ` lines; a line ending in a backslash continues on the next) and, under each, the
output lines it shows, where `...` stands for any text. A block that cannot run on a test machine is marked on the
line before its fence: `<!-- not run (KIND): reason -->`.
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
MARKER = re.compile(r"<!-- not run \((?P<kind>[a-z]+)\): (?P<reason>.*\S) -->")
KINDS = {
    "gpu": "needs an NVIDIA GPU",
    "cluster": "needs several machines, a scheduler or a server that a test machine lacks",
    "download": "needs files to download (released networks, datasets, photos)",
    "install": "installs from the package index",
    "slow": "takes longer than the docs' test budget on 2 cores; its own tests run it at toy size",
    "excerpt": "a piece of a source file, shown to be read: not a whole program",
}
SHELL_LANGUAGES = ("", "bash", "sh", "shell", "zsh")


@dataclass(frozen=True)
class Command:
    """One `$ ` command of a console block: its text (continuations joined), its line, the output lines it shows."""

    text: str
    line: int
    shown: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    """One fenced block: the page (relative to the repository), the line of its opening fence, its language, its
    lines (without the fence's indentation), and the marker before it (kind, reason) when it has one."""

    page: str
    line: int
    language: str
    lines: tuple[str, ...]
    marker: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def commands(self) -> list[Command]:
        found: list[Command] = []
        continued = False
        for number, text in enumerate(self.lines, self.line + 1):
            if continued:
                last = found[-1]
                found[-1] = Command(f"{last.text}\n{text}", last.line, last.shown)
            elif text.startswith("$ "):
                found.append(Command(text[2:], number, ()))
            elif found and text.strip():
                found[-1] = Command(found[-1].text, found[-1].line, (*found[-1].shown, text.rstrip()))
            continued = text.rstrip().endswith("\\")
        return found


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    lines = path.read_text().splitlines()
    found, index = [], 0
    while index < len(lines):
        line = lines[index]
        if not line.lstrip().startswith("```"):
            index += 1
            continue
        indent, language = len(line) - len(line.lstrip()), line.strip()[3:].strip()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        found.append(
            Block(
                page=str(path.relative_to(ROOT)),
                line=index + 1,
                language=language,
                lines=tuple(text[indent:] for text in lines[index + 1 : end]),
                marker=_marker(lines[:index]),
            )
        )
        index = end + 1
    return found


def _marker(before: list[str]) -> tuple[str, str] | None:
    """The marker on the nearest non-blank line before a fence, if that line is one (or a malformed one: kind "")."""
    previous = next((text.strip() for text in reversed(before) if text.strip()), "")
    if not previous.startswith("<!-- not run"):
        return None
    match = MARKER.fullmatch(previous)
    return (match["kind"], match["reason"]) if match else ("", previous)


def pages() -> list[Path]:
    """The docs' pages in the order the site's navigation lists them (the Quickstart before the pages that use its
    run), then any page the navigation leaves out (the build refuses those)."""
    listed = re.findall(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    unlisted = sorted({p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - set(listed))
    return [DOCS / name for name in [*listed, *unlisted]]


def shown_line_matches(pattern: str, line: str) -> bool:
    """Does an output line match a shown line, where `...` stands for any text?"""
    regex = ".*".join(re.escape(part) for part in pattern.strip().split("..."))
    return re.fullmatch(regex, line.strip()) is not None


def missing_shown_lines(shown: tuple[str, ...], output: str) -> list[str]:
    """The shown lines (other than a lone `...`) that the output lacks, in order: each must match a line after the
    one the previous matched."""
    lines, position, missing = output.splitlines(), 0, []
    for pattern in shown:
        if pattern.strip() == "...":
            continue
        hit = next((i for i in range(position, len(lines)) if shown_line_matches(pattern, lines[i])), None)
        if hit is None:
            missing.append(pattern)
        else:
            position = hit + 1
    return missing
