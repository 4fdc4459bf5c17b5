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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ganforge.errors import UserError

MATHS = "maths"  # field metadata: does changing the value change what training computes?
OPTION = "option"  # field metadata: the Option that sets the field, if any


@dataclass(frozen=True)
class Range:
    """The numbers an option accepts: always finite (NaN and infinity are never a setting), and within
    [low, high], either end open where asked; with `whole`, whole numbers only (a count, a seed, a port)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    whole: bool = False

    def problem(self, value: float) -> str | None:
        """Why `value` is not accepted ("must be ..."), or None."""
        finite = not isinstance(value, float) or math.isfinite(value)
        fraction = self.whole and isinstance(value, float)
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return f"must be {self.describe()}" if not finite or fraction or below or above else None

    def describe(self) -> str:
        if self.whole:
            assert None not in (self.low, self.high) and not (self.low_open or self.high_open), self
            return f"from {self.low:,} to {self.high:,}"
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
    joined by underscores (on a field of the options type itself, the field's name). `kind` is int, float, str, Path or
    bool (a switch that is off unless given); it defaults to the field's type (of a `multiple` option, the type of its
    items). `preset`: the default comes from the `--cfg` row or is derived, not from the field. `shown_default`
    replaces the help's `[default: ...]` where the default is neither the field's nor the preset's. `bare`: the value
    of a choice given as the flag alone (`--compile` for `--compile default`), so that a switch can grow choices.
    `file`: a Path option that names a file to write, never a folder (one already there is refused by the parser).
    `multiple`: the flag may be repeated, and the field holds what was given, in order; `nargs`: the words one flag
    takes; `aliases`: other flags of the same option; `envvar`: a variable of the environment that gives the value
    when the flag is not given. `text` writes a value of the field back as the word(s) the command line takes, where
    the command parses its words into something else (a seed list into seeds: each of `nargs` words is written by
    it); without it, a float is written exactly (repr) and anything else as str."""

    section: str
    help: str
    flag: str = ""
    name: str = ""
    kind: type | None = None
    choices: tuple = ()  # the values accepted, as the command line writes them (str) or ints
    range: Range | None = None
    preset: bool = False
    shown_default: str = ""
    metavar: str | None = None
    required: bool = False
    negated: bool = False  # a switch that sets its field to False (--no-report)
    must: str = ""  # what a refused value must be, in the option's own terms (default: the range's description)
    bare: str = ""  # the value of the flag given without one (one of `choices`); "": a value is needed
    file: bool = False
    multiple: bool = False
    nargs: int = 1
    aliases: tuple[str, ...] = ()
    envvar: str = ""
    text: Callable | None = None

    def __post_init__(self):
        assert not self.bare or self.bare in self.choices, (self.bare, self.choices)
        assert not (self.multiple and self.nargs > 1), "a repeated flag takes one word each time"
        assert not self.file or self.kind in (None, Path), "a file is a Path"


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
        if self.option.name:
            return self.option.name
        own_field = self.field is not None and "." not in self.path
        return self.path if own_field else self.flag.lstrip("-").replace("-", "_")

    @property
    def kind(self) -> type:
        return self.option.kind or _plain_type(self.field.type, items=self.option.multiple)

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
        if default is dataclasses.MISSING or default is None or self.kind is bool or self.option.multiple:
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
            return f"{self.flag} {value}: unknown; use one of {', '.join(map(str, self.option.choices))}"
        numeric = self.kind in (int, float) or self.option.range is not None
        if numeric and not isinstance(value, (int, float)) or isinstance(value, bool):
            return f"{self.flag} {value!r:.40}: not a number"
        if self.kind is int and isinstance(value, float):  # from a Python caller: the command line gives an int
            return f"{self.flag} {number(value)}: not a whole number"
        if self.option.range is None or self.option.range.problem(value) is None:
            return None
        return f"{self.flag} {number(value)}: must be {self.option.must or self.option.range.describe()}"

    def words(self, value) -> list[str]:
        """The command-line words that give `value`: the flag alone for a switch, else the flag and its value (once
        per item of a repeated flag)."""
        if self.kind is bool:
            return [self.flag]
        if self.option.multiple:
            return [word for item in value for word in (self.flag, self._text(item))]
        if self.option.nargs > 1:
            return [self.flag, *map(self._text, value)]
        return [self.flag, self._text(value)]

    def _text(self, value) -> str:
        if self.option.text is not None:
            return self.option.text(value)
        return repr(value) if isinstance(value, float) else str(value)


def _plain_type(annotation, items: bool = False) -> type:
    """int for `int`, `int | None`; tuple for `tuple[float, ...]`, or with `items`, float."""
    if isinstance(annotation, types.UnionType):
        kinds = [a for a in annotation.__args__ if a is not type(None)]
        assert len(kinds) == 1, annotation
        annotation = kinds[0]
    if items:
        return _plain_type(annotation.__args__[0])
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


def refuse_bad_values(options: list[Declared], values) -> None:
    """Raise a UserError with one line per given value that its option does not accept (none: return)."""
    problems = value_problems(options, values)
    if problems:
        raise UserError(*problems)


def given(values: dict) -> dict:
    """The values of a command line that were given: its derived options have no default (click passes None for one
    not given), so that the field's own default applies."""
    return {name: value for name, value in values.items() if value is not None}


def command_words(options: list[Declared], values) -> list[str]:
    """The flags that give `values` (an object whose fields the `options` set), in the order declared: a required
    option always, any other where its value is not its field's default."""
    words = []
    for d in options:
        value = getattr(values, d.name)
        if d.default is dataclasses.MISSING or value != d.default:
            words += d.words(value)
    return words
