"""Every numeric option of a command made from declarations (`train`, `bench`, `generate`, ...), given NaN, an
infinity or an integer far beyond any use, and every choice given a value it does not offer, is refused by one line
naming the flag (exit 2), under `--dry-run` exactly as in a real run, in bounded time and memory, with nothing
written. The table is derived from the option declarations, so a new option is covered the day it is declared. The
numbers of the commands not made from declarations are bounded by click."""

import click
import pytest
from hostile_harness import Case, assert_all_rejected

from ganforge.bench.options import BENCH_OPTIONS
from ganforge.cli import main
from ganforge.compare.options import DIFF_OPTIONS
from ganforge.data.options import BUILD_OPTIONS, VERIFY_OPTIONS
from ganforge.doctor.options import DOCTOR_OPTIONS
from ganforge.explore.options import EXPLORE_OPTIONS
from ganforge.export.options import EXPORT_OPTIONS
from ganforge.generate.options import GENERATE_OPTIONS
from ganforge.interop.options import IMPORT_OPTIONS
from ganforge.metrics.options import METRICS_OPTIONS
from ganforge.project.options import PROJECT_OPTIONS
from ganforge.report.options import REPORT_OPTIONS
from ganforge.sweep.options import SWEEP_OPTIONS
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


# The other commands made from declarations: their declarations, a command line they would run (its options are
# checked before any file is read) and what it would write, and the flags an option needs beside it to mean something.
DECLARED_COMMANDS = {
    "generate": (GENERATE_OPTIONS, ("generate", "--network", "G.safetensors", "--outdir", "out", "--seeds", "0,1"),
                 "out"),
    "export": (EXPORT_OPTIONS, ("export", "--network", "G.safetensors", "--out", "G.onnx"), "G.onnx"),
    "project": (PROJECT_OPTIONS, ("project", "--network", "G.safetensors", "--target", "t.png", "--outdir", "out"),
                "out"),
    "metrics": (METRICS_OPTIONS, ("metrics", "--real", "reals", "--fake", "reals", "--outdir", "out"), "out"),
    "dataset build": (BUILD_OPTIONS, ("dataset", "build", "images", "out.zip", "--resolution", "8"), "out.zip"),
    "dataset verify": (VERIFY_OPTIONS, ("dataset", "verify", "data.zip"), "data.zip"),
    "explore": (EXPLORE_OPTIONS, ("explore", "--network", "G.safetensors"), "G.safetensors"),
    "sweep": (SWEEP_OPTIONS, ("sweep", "--data", "data.zip", "--outdir", "out"), "out"),
    "doctor": (DOCTOR_OPTIONS, ("doctor", "--quick", "--outdir", "out"), "out"),
    "report": (REPORT_OPTIONS, ("report", "run"), "run"),
    "checkpoint diff": (DIFF_OPTIONS, ("checkpoint", "diff", "a", "b"), "a"),
    "import": (IMPORT_OPTIONS, ("import", "G.pkl", "G.safetensors"), "G.safetensors"),
}  # fmt: skip
NEEDS = {
    ("generate", "--fps"): ("--interp", "2"),
    ("generate", "--resize"): ("--size", "8"),
    ("generate", "--edit-dim"): ("--edit-amount", "1"),
    ("generate", "--edit-seed"): ("--edit-amount", "1"),
    ("generate", "--edit-amount"): ("--edit-seed", "1"),
    ("export", "--qat-kimg"): ("--precision", "int8"),
}


def test_every_declared_commands_bad_numbers_and_choices_are_one_line_each(tmp_path):
    (tmp_path / "images").mkdir()  # dataset build's SRC: only the option is wrong
    cases, flags = [], []
    for command, (options, base, written) in DECLARED_COMMANDS.items():
        for d in options:
            for value in _bad_values(d):
                args = (*base, *NEEDS.get((command, d.flag), ()), d.flag, value)
                cases.append(Case(f"{command} {d.flag} {value}", args, absent=(written,)))
                flags.append(d.flag)
    outcomes = assert_all_rejected(cases, tmp_path)
    for case, flag, outcome in zip(cases, flags, outcomes, strict=True):
        assert flag in outcome.stderr, (case.name, outcome.stderr)


def _commands(group, path=()):
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_every_other_commands_numbers_are_bounded_by_click():
    """An int option of the commands not made from declarations is a click.IntRange with both ends; none takes a float
    (click lets NaN through any FloatRange)."""
    unchecked = []
    for name, command in _commands(main):
        if name in ("train", "bench", *DECLARED_COMMANDS):  # the declarations' own tables above
            continue
        for param in command.params:
            bounded = isinstance(param.type, click.IntRange) and None not in (param.type.min, param.type.max)
            numeric = param.type in (click.INT, click.FLOAT) or isinstance(
                param.type, (click.IntRange, click.FloatRange)
            )
            if numeric and not bounded:
                unchecked.append(f"{name} {param.opts[0]}")
    assert not unchecked, unchecked
