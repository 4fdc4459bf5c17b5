"""A command-line option, declared once: on the dataclass field whose value it sets.

    gamma: float = option("Configuration", "R1 weight.", range=Range(0), preset=True)

The field states the default (or, with `preset=True`, that the `--cfg` row decides it), and its Option states the
flag, the help text, the help section, and the values it accepts. Everything else is derived from the declarations:
the options type a command receives (`options_type`: one field per option, None = not given), its click options
(`ganforge.cli.declared`), the value checks (`value_problems`, applied wherever options become facts, so that
`--dry-run` and Python callers get exactly the checks of a real run), the help's `[default: ...]`, and whether a
field is part of the training maths (`maths=False` on a field or a whole section).

This module imports neither torch nor click.
"""

import dataclasses
import math
import types
from dataclasses import dataclass

MATHS = "maths"  # field metadata: does changing the value change what training computes?
OPTION = "option"  # field metadata: the Option that sets the field, if any


@dataclass(frozen=True)
class Range:
    """The numbers an option accepts: always finite (NaN and infinity are never a setting), and within
    [low, high], either end open where asked."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def problem(self, value: float) -> str | None:
        """Why `value` is not accepted ("must be ..."), or None."""
        finite = not isinstance(value, float) or math.isfinite(value)
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return f"must be {self.describe()}" if not finite or below or above else None

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"a finite number in {left}{number(self.low)}, {number(self.high)}{right}"
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {number(self.low)}"
        if self.high is not None:
            return f"a finite number {'<' if self.high_open else '<='} {number(self.high)}"
        return "a finite number"


def number(value: float) -> str:
    """A number as a message shows it: an integer exactly (cut short past 24 digits: a message never echoes an
    unbounded input), a float in its shortest form."""
    if not isinstance(value, int):
        return f"{value:g}"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


@dataclass(frozen=True)
class Option:
    """How the user sets one value: the help `section` it is listed under, its `help` text, and what it accepts.

    `flag` defaults to the field's name with dashes, `name` (the keyword of the options type) to the flag's words
    joined by underscores. `kind` is int, float, str or bool (a switch that is off unless given); it defaults to the
    field's type. `preset`: the default comes from the `--cfg` row or is derived, not from the field. `shown_default`
    replaces the help's `[default: ...]` where the default is neither the field's nor the preset's. `bare`: the value
    of a choice given as the flag alone (`--compile` for `--compile default`), so that a switch can grow choices."""

    section: str
    help: str
    flag: str = ""
    name: str = ""
    kind: type | None = None
    choices: tuple[str, ...] = ()
    range: Range | None = None
    preset: bool = False
    shown_default: str = ""
    metavar: str | None = None
    required: bool = False
    negated: bool = False  # a switch that sets its field to False (--no-report)
    must: str = ""  # what a refused value must be, in the option's own terms (default: the range's description)
    bare: str = ""  # the value of the flag given without one (one of `choices`); "": a value is needed

    def __post_init__(self):
        assert not self.bare or self.bare in self.choices, (self.bare, self.choices)


def option(section: str, help: str, *, default=dataclasses.MISSING, maths: bool = True, **declaration):
    """A dataclass field that a command-line option sets: its default (stated here and nowhere else), its Option
    (`section`, `help` and the `declaration`'s keywords), and whether changing it between a checkpoint and its resumed
    run changes the training maths."""
    metadata = {OPTION: Option(section, help, **declaration), MATHS: maths}
    return dataclasses.field(default=default, metadata=metadata)


def setting(default=dataclasses.MISSING, *, maths: bool = True):
    """A dataclass field that no option sets, declared outside the training maths (`maths=False`)."""
    return dataclasses.field(default=default, metadata={MATHS: maths})


@dataclass(frozen=True)
class Declared:
    """One option as the commands see it: where its value goes (`path`, dotted, "" for an option of the command
    itself), the Option, and the field it sets (None for a command's own option)."""

    path: str
    option: Option
    field: dataclasses.Field | None

    @property
    def flag(self) -> str:
        return self.option.flag or "--" + self.path.rsplit(".", 1)[-1].replace("_", "-")

    @property
    def name(self) -> str:
        return self.option.name or self.flag.lstrip("-").replace("-", "_")

    @property
    def kind(self) -> type:
        return self.option.kind or _plain_type(self.field.type)

    @property
    def default(self):
        """The field's default (dataclasses.MISSING when it has none)."""
        return dataclasses.MISSING if self.field is None else self.field.default

    def shown_default(self) -> str:
        """The `[default: ...]` of the help text, read from where the default lives."""
        if self.option.shown_default:
            return self.option.shown_default
        if self.option.preset:
            return "from --cfg"
        default = self.default
        if default is dataclasses.MISSING or default is None or self.kind is bool:
            return ""
        if isinstance(default, tuple):
            return ", ".join(map(str, default)) or "none"
        return f"{default:g}" if isinstance(default, float) else str(default)

    def value_of(self, given):
        """A given value as its field holds it: for an option with `bare`, True (from a Python caller of the time it
        was a switch) is the flag alone."""
        return self.option.bare if self.option.bare and given is True else given

    def problem(self, value) -> str | None:
        """Why a given value is not accepted, as a complete message naming the flag, or None."""
        if value is None or self.kind is bool or self.option.bare and isinstance(value, bool):
            return None
        if self.option.choices and value not in self.option.choices:
            return f"{self.flag} {value}: unknown; use one of {', '.join(self.option.choices)}"
        if self.kind in (int, float) and not isinstance(value, (int, float)) or isinstance(value, bool):
            return f"{self.flag} {value!r:.40}: not a number"
        if self.option.range is None or self.option.range.problem(value) is None:
            return None
        return f"{self.flag} {number(value)}: must be {self.option.must or self.option.range.describe()}"


def _plain_type(annotation) -> type:
    """int for `int`, `int | None`; tuple for `tuple[float, ...]`."""
    if isinstance(annotation, types.UnionType):
        kinds = [a for a in annotation.__args__ if a is not type(None)]
        assert len(kinds) == 1, annotation
        annotation = kinds[0]
    return getattr(annotation, "__origin__", annotation)


def declared(cls, prefix: str = "") -> list[Declared]:
    """The options declared on the fields of dataclass `cls` and of its dataclass-typed fields (depth first, in
    field order)."""
    found = []
    for field in dataclasses.fields(cls):
        path = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(field.type):
            found += declared(field.type, f"{path}.")
        elif field.metadata.get(OPTION) is not None:
            found.append(Declared(path, field.metadata[OPTION], field))
    return found


def non_maths_paths(cls, prefix: str = "") -> frozenset[str]:
    """Dotted names of the fields of `cls` (nested) declared with maths=False; a section field declared so covers
    every field under it."""
    found = set()
    for field in dataclasses.fields(cls):
        path = f"{prefix}{field.name}"
        if not field.metadata.get(MATHS, True):
            found.add(path)
        elif dataclasses.is_dataclass(field.type):
            found |= non_maths_paths(field.type, f"{path}.")
    return frozenset(found)


def options_type(name: str, options: list[Declared], doc: str, module: str):
    """A frozen dataclass with one keyword field per option: the required options, then the others with None (a
    switch: False) for "not given"."""
    fields = []
    for d in sorted(options, key=lambda d: not d.option.required):
        if d.option.required:
            fields.append((d.name, d.kind))
        elif d.kind is bool:
            fields.append((d.name, bool, dataclasses.field(default=False)))
        else:
            fields.append((d.name, d.kind | None, dataclasses.field(default=None)))
    cls = dataclasses.make_dataclass(name, fields, frozen=True, kw_only=True)
    cls.__doc__, cls.__module__, cls.__qualname__ = doc, module, name
    return cls


def value_problems(options: list[Declared], values) -> list[str]:
    """One message per given value that its option does not accept."""
    return [p for d in options if (p := d.problem(getattr(values, d.name))) is not None]
