"""The report page as a reader's browser builds it, without a browser: html.parser into a small element tree, with
the structure checked on the way (a doctype, every tag closed in order); and the figures' SVG (matplotlib's: text
kept as text) read for what a reader sees in them: its texts, and where lines are drawn against the y axis."""

import base64
import html.parser
import re
import xml.etree.ElementTree as ET
from collections import Counter

VOID = {"meta", "img", "br", "hr", "input", "link", "source", "wbr"}


class Element:
    """One element: its tag, attributes, and children (elements and text) in document order."""

    def __init__(self, tag: str, attrs: dict[str, str]):
        self.tag, self.attrs, self.children = tag, attrs, []

    def walk(self):
        """This element and every element inside it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list["Element"]:
        """Elements inside (and including) this one with that tag, that class among theirs, and those attributes."""
        return [
            e
            for e in self.walk()
            if (tag is None or e.tag == tag)
            and (cls is None or cls in e.attrs.get("class", "").split())
            and all(e.attrs.get(k) == v for k, v in attrs.items())
        ]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> "Element":
        """The one element find_all finds (an assertion error when there are none or several)."""
        (found,) = self.find_all(tag, cls, **attrs)
        return found

    @property
    def text(self) -> str:
        """The text a reader sees in it, white space collapsed (style sheets are not text)."""
        parts = [c if isinstance(c, str) else c.text for c in self.children if getattr(c, "tag", "") != "style"]
        return " ".join(" ".join(parts).split())


class Page(html.parser.HTMLParser):
    """Parses a report and checks its structure: balanced tags, a doctype, and what it refers to."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack, self.doctype, self.tags = [self.root], None, Counter()
        self.feed(text)
        self.close()
        assert self.stack == [self.root], f"unclosed tags: {[e.tag for e in self.stack[1:]]}"

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.tags[tag] += 1
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        assert len(self.stack) > 1 and self.stack[-1].tag == tag, f"</{tag}> closes {self.stack[-1].tag}"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)

    @property
    def ids(self) -> list[str]:
        return [e.attrs["id"] for e in self.root.walk() if "id" in e.attrs]

    @property
    def images(self) -> list[dict[str, str]]:
        return [e.attrs for e in self.root.find_all("img")]

    @property
    def references(self) -> list[str]:
        keys = ("src", "href", "action", "data", "poster")
        return [e.attrs[k] for e in self.root.walk() for k in keys if k in e.attrs]

    @property
    def all_text(self) -> str:
        return self.root.text

    def image(self, alt: str) -> bytes:
        """The bytes of the one image with this alt text."""
        (img,) = [i for i in self.images if i.get("alt") == alt]
        return base64.b64decode(img["src"].split(",", 1)[1])

    def figure(self, alt: str) -> Element:
        """The figure holding the one image with this alt text."""
        figures = self.root.find_all("figure")
        (found,) = [f for f in figures if any(i.attrs.get("alt") == alt for i in f.find_all("img"))]
        return found

    def svg(self, alt: str) -> "Svg":
        """The SVG of the one figure with this alt text."""
        return Svg(self.image(alt))


SVG = "{http://www.w3.org/2000/svg}"
_POINT = r"([-0-9.]+) ([-0-9.]+)"


class Svg:
    """A figure's SVG as matplotlib writes it: each tick a group `xtick_<n>` / `ytick_<n>` holding its grid line
    and its label, each line a path in a group `line2d_<n>`."""

    def __init__(self, data: bytes):
        self.root = ET.fromstring(data)

    @property
    def texts(self) -> list[str]:
        """Every text drawn (title, axis labels, tick labels, legend entries), in order."""
        return [" ".join("".join(t.itertext()).split()) for t in self.root.iter(f"{SVG}text")]

    def _groups(self, prefix: str):
        return [g for g in self.root.iter(f"{SVG}g") if g.get("id", "").startswith(prefix)]

    def y_at(self, value: float) -> float:
        """The SVG y coordinate of `value` on the y axis, from the grid lines of its labelled ticks (linear)."""
        ticks = []
        for group in self._groups("ytick_"):
            label = "".join("".join(t.itertext()) for t in group.iter(f"{SVG}text")).replace("\u2212", "-")
            path = next(group.iter(f"{SVG}path"))
            ticks.append((float(label), float(re.match(r"M " + _POINT, path.get("d")).group(2))))
        (v0, y0), (v1, y1) = ticks[0], ticks[-1]
        return y0 + (value - v0) * (y1 - y0) / (v1 - v0)

    def horizontal_lines(self, stroke: str) -> list[float]:
        """The y of every horizontal line of that colour drawn inside the axes (clipped to them: not the legend's)."""
        found = []
        for path in self.root.iter(f"{SVG}path"):
            points = re.findall(_POINT, path.get("d", ""))
            style = path.get("style", "")
            if path.get("clip-path") and f"stroke: {stroke}" in style and len(points) == 2:
                (_, y0), (_, y1) = points
                if y0 == y1:
                    found.append(float(y0))
        return found
