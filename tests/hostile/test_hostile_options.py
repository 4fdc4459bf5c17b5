"""Every numeric option of `train` and `bench`, given NaN, an infinity or an integer far beyond any use, and every
choice given a value it does not offer, is refused by one line naming the flag (exit 2), under `--dry-run` exactly as
in a real run, in bounded time and memory. The table is derived from the option declarations, so a new option is
covered the day it is declared."""

import pytest
from hostile_harness import Case, assert_all_rejected

from ganforge.bench.options import BENCH_OPTIONS
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
