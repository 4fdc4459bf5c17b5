"""Every numeric option of `train` and `bench`, given NaN, an infinity or an integer far beyond any use, and every
choice given a value it does not offer, is refused by one line naming the flag (exit 2), under `--dry-run` exactly as
in a real run, in bounded time and memory. The table is derived from the option declarations, so a new option is
covered the day it is declared."""

from pathlib import Path

import click
import pytest
from hostile_harness import Case, assert_all_rejected

from ganforge.bench.options import BENCH_OPTIONS
from ganforge.cli import main
from ganforge.train.options import TRAIN_OPTIONS
from launch_helpers import tiny_archive

HUGE = str(2**70)
BAD_VALUES = {int: (HUGE,), float: ("nan", "inf", "-inf")}


def _bad_values(d) -> list[str]:
    if d.option.choices:
        return ["bogus"]
    return list(BAD_VALUES.get(d.kind, ()))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tiny_archive(tmp_path_factory.mktemp("hostile-options"))


def test_train_and_bench_refuse_every_bad_number_and_choice_with_one_line(data, tmp_path):
    train = ["train", "--data", str(data), "--outdir", str(tmp_path / "runs"), "--cfg", "tiny", "--device", "cpu"]
    bench = ["bench", "--cfg", "tiny", "--resolution", "8", "--device", "cpu", "--steps", "1", "--warmup", "0"]
    cases = []
    for command, options, base in (("train", TRAIN_OPTIONS, train), ("bench", BENCH_OPTIONS, bench)):
        for d in options:
            if d.flag in ("--cfg", "--device", "--resolution"):  # the base command line's own; tested on their own
                continue
            for value in _bad_values(d):
                extra = ["--aug", "fixed"] if d.flag == "--aug-p" else []
                cases.append(Case(f"{command} {d.flag} {value}", (*base, *extra, d.flag, value, "--dry-run")
                                  if command == "train" else (*base, *extra, d.flag, value)))  # fmt: skip
    cases += [
        Case("train --cfg bogus", (*train, "--cfg", "bogus", "--dry-run")),
        Case("train --kimg nan without --dry-run", (*train, "--kimg", "nan"), absent=("runs",)),
        Case("bench --resolution 2^70", (*bench, "--resolution", HUGE)),
    ]
    outcomes = assert_all_rejected(cases, tmp_path)
    for case, outcome in zip(cases, outcomes, strict=True):
        flag = case.name.split()[1]
        assert flag in outcome.stderr, (case.name, outcome.stderr)


# Numbers that their command checks where it parses its options (generate/options.py, export/options.py,
# data/build.py), each tried with hostile values in tests/hostile/test_hostile_outputs.py or test_hostile_data.py.
CHECKED_WHERE_PARSED = {
    "generate": ("--trunc", "--trunc-cutoff", "--class", "--batch", "--interp", "--rotate", "--fps"),
    "export": (
        "--trunc",
        "--check",
        "--check-fid",
        "--max-abs-diff",
        "--max-fid-delta",
        "--calib",
        "--seed",
        "--qat-kimg",
    ),
    "dataset build": ("--resolution",),
}
HOSTILE_TABLES = ("test_hostile_outputs.py", "test_hostile_data.py")


def _commands(group, path=()):
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_every_other_commands_numbers_are_bounded_by_click_or_checked_where_parsed():
    """An int option of the other commands is a click.IntRange with both ends; a float option (click lets NaN
    through any FloatRange) or an open-ended int is checked where its command parses it, and a hostile table tries
    it there."""
    tables = "".join((Path(__file__).parent / name).read_text() for name in HOSTILE_TABLES)
    unchecked = []
    for name, command in _commands(main):
        if name in ("train", "bench"):  # the declarations' own table above
            continue
        for param in command.params:
            bounded = isinstance(param.type, click.IntRange) and None not in (param.type.min, param.type.max)
            numeric = param.type in (click.INT, click.FLOAT) or isinstance(
                param.type, (click.IntRange, click.FloatRange)
            )
            flag = param.opts[0]
            parsed = flag in CHECKED_WHERE_PARSED.get(name, ()) and f'"{flag}"' in tables
            if numeric and not bounded and not parsed:
                unchecked.append(f"{name} {flag}")
    assert not unchecked, unchecked
