"""The Python API's reference, generated from `ganforge.api` at every docs build: each public function, class,
method and property with its signature and docstring, in place of the marker on `python-api.md`."""

import inspect
import re

from page_marker import replace_marker

from ganforge import api

MARKER = "<!-- generated: the Python API -->"
PAGE = "python-api.md"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """mkdocs' hook: the reference in place of the marker on the API page; other pages as they are."""
    return replace_marker(markdown, page, PAGE, MARKER, reference)


def reference() -> str:
    """`ganforge.load`, then the class it returns and its public members, in source order."""
    sections = [_entry("ganforge.load", api.load, "###", "function")]
    sections.append(_entry("ganforge.api.Network", api.Network, "###", "class"))
    for name, member in _members(api.Network):
        kind = "property" if isinstance(member, property) else "method"
        sections.append(_entry(f"Network.{name}", member, "####", kind))
    return "\n\n".join(sections) + "\n"


def _members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties of `cls` as defined in it, in source order."""
    found = [(name, value) for name, value in vars(cls).items() if not name.startswith("_")]
    return sorted(found, key=lambda item: _source_line(item[1]))


def _source_line(member) -> int:
    function = member.fget if isinstance(member, property) else member
    return inspect.getsourcelines(function)[1]


def _entry(name: str, member, level: str, kind: str) -> str:
    if kind == "property":
        heading, doc = name, inspect.getdoc(member.fget)
    else:
        heading, doc = f"{name}{_signature(member)}", inspect.getdoc(member)
    text = " ".join((doc or "").split())
    return f"{level} `{heading}`\n\n*{kind}*{': ' + text if text else ''}"


def _signature(member) -> str:
    """The signature without `self`, with annotations as written."""
    signature = inspect.signature(member)
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    text = str(signature.replace(parameters=parameters))
    return re.sub(r"(-> |: )'([^']*)'", r"\1\2", text)  # string annotations ("Network") without their quotes
