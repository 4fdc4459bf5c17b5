"""The search space of `ganforge sweep`: one entry per `train` option, written `NAME=SPEC` where NAME is the option's
flag without its dashes and SPEC is

    log:LOW..HIGH    log-uniform between LOW and HIGH (both > 0): gamma, learning rates, EMA half-lives
    LOW..HIGH        uniform; whole numbers where the option takes them (freeze-d=0..4)
    A|B|C            one of these values (aug=ada|noaug, mirror=true|false)
    VALUE            fixed for every trial (batch=16, workers=0)

Every value is checked against the option's own declaration (its kind, range and choices), so a space can hold only
what `ganforge train` would accept. The family's default space (`Family.sweep_space`) applies with the user's entries
replacing those of the same name.
"""

import math
from dataclasses import dataclass

from ganforge.errors import UserError
from ganforge.option import Declared
from ganforge.train.options import TRAIN_OPTIONS

LOG, UNIFORM, CHOICE, FIXED = "log", "uniform", "choice", "fixed"
# Options the sweep itself sets for every trial: they are its own flags, never a dimension.
OWNED = ("data", "outdir", "cfg", "kimg", "metrics", "metrics-gen", "resume", "dry-run", "device")
TRUE, FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


@dataclass(frozen=True)
class Dimension:
    """One entry of the space: the option it sets, how it varies (LOG, UNIFORM, CHOICE or FIXED) and its values:
    (low, high) for LOG and UNIFORM, the choices for CHOICE, the one value for FIXED."""

    name: str
    declared: Declared
    how: str
    values: tuple

    def words(self, value) -> list[str]:
        """The `train` words that give `value` (a switch set to false gives none: its default)."""
        if self.declared.kind is bool:
            return [self.declared.flag] if value else []
        return self.declared.words(value)

    def text(self) -> str:
        """The entry as the user writes it."""
        if self.how == FIXED:
            return f"{self.name}={_shown(self.values[0])}"
        if self.how == CHOICE:
            return f"{self.name}={'|'.join(map(_shown, self.values))}"
        low, high = map(_shown, self.values)
        return f"{self.name}={'log:' if self.how == LOG else ''}{low}..{high}"


def _shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)


def sweepable() -> dict[str, Declared]:
    """The train options a space may hold, by flag without dashes (their aliases too)."""
    found = {}
    for d in TRAIN_OPTIONS:
        names = [d.flag.lstrip("-"), *(alias.lstrip("-") for alias in d.option.aliases)]
        if d.flag.lstrip("-") not in OWNED and not d.option.multiple and d.option.nargs <= 1:
            found |= dict.fromkeys(names, d)
    return found


def parse_value(d: Declared, text: str):
    """`text` as a value of option `d`; ValueError saying why not."""
    text = text.strip()
    if d.kind is bool:
        if text.lower() not in TRUE + FALSE:
            raise ValueError(f"{text!r:.40} is not true or false")
        return text.lower() in TRUE
    if d.kind is int:
        if not text.lstrip("+-").isdigit():
            raise ValueError(f"{text!r:.40} is not a whole number")
        return int(text)
    if d.kind is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text!r:.40} is not a finite number")
        return value
    return text


def parse_entry(entry: str, options: dict[str, Declared]) -> Dimension:
    """One `NAME=SPEC` entry; UserError naming the entry and what to write instead."""
    name, sep, spec = entry.partition("=")
    name = name.strip().lstrip("-")
    where = f"--space {entry!r:.80}"
    if not sep or not spec.strip():
        raise UserError(f"{where}: write NAME=SPEC, e.g. gamma=log:0.01..10, aug=ada|noaug or batch=16")
    if name.replace("_", "-") in OWNED:
        raise UserError(f"{where}: --{name} is set by the sweep for every trial; give it to `ganforge sweep` itself")
    d = options.get(name) or options.get(name.replace("_", "-"))
    if d is None:
        raise UserError(f"{where}: `ganforge train` has no option --{name:.40} (its help lists them)")
    how, values = _spec(spec.strip(), d, where)
    for value in values:
        if (problem := d.problem(value)) is not None:
            raise UserError(f"{where}: {problem}")
    return Dimension(name, d, how, values)


def _spec(spec: str, d: Declared, where: str) -> tuple[str, tuple]:
    """How the entry varies and its values, parsed as the option's kind."""
    log = spec.startswith("log:")
    body = spec[4:] if log else spec
    try:
        if ".." in body:
            low, high = (parse_value(d, part) for part in body.split("..", 1))
            return _bounds(log, low, high, d, where)
        if log:
            raise ValueError("log: needs LOW..HIGH")
        if "|" in body:
            choices = tuple(dict.fromkeys(parse_value(d, part) for part in body.split("|")))
            return (CHOICE, choices) if len(choices) > 1 else (FIXED, choices)
        return FIXED, (parse_value(d, body),)
    except ValueError as error:
        raise UserError(f"{where}: {error} (--{d.flag.lstrip('-')} takes {d.kind.__name__} values)") from None


def _bounds(log: bool, low, high, d: Declared, where: str) -> tuple[str, tuple]:
    if d.kind not in (int, float) or isinstance(low, bool):
        raise ValueError(f"a range needs a numeric option; use A|B for --{d.flag.lstrip('-')}")
    if not low < high:
        raise UserError(f"{where}: LOW must be below HIGH")
    if log and low <= 0:
        raise UserError(f"{where}: log: needs LOW > 0 (a log-uniform range cannot reach 0)")
    return (LOG if log else UNIFORM), (low, high)


def parse_space(entries, family_default) -> tuple[Dimension, ...]:
    """The space: the family's default entries, each replaced by the user's entry of the same option, then the user's
    other entries, in their order. Every bad entry is listed in one UserError."""
    options, problems, chosen = sweepable(), [], {}
    for entry in (*family_default, *entries):
        try:
            dim = parse_entry(entry, options)
        except UserError as error:
            problems.extend(error.problems)
            continue
        chosen.pop(dim.declared.name, None)  # a later entry of the same option replaces the earlier one
        chosen[dim.declared.name] = dim
    if problems:
        raise UserError(*problems)
    return tuple(chosen.values())


def suggest(trial, space: tuple[Dimension, ...]) -> dict:
    """The trial's value of every dimension (fixed ones too), asked of Optuna's sampler."""
    params = {}
    for dim in space:
        if dim.how == FIXED:
            params[dim.name] = dim.values[0]
        elif dim.how == CHOICE:
            params[dim.name] = trial.suggest_categorical(dim.name, list(dim.values))
        elif dim.declared.kind is int:
            params[dim.name] = trial.suggest_int(dim.name, *dim.values, log=dim.how == LOG)
        else:
            params[dim.name] = trial.suggest_float(dim.name, *map(float, dim.values), log=dim.how == LOG)
    return params


def train_words(space: tuple[Dimension, ...], params: dict) -> list[str]:
    """The `train` flags that give the trial's values."""
    return [word for dim in space if dim.name in params for word in dim.words(params[dim.name])]
