"""The search space: each form of an entry, its values checked against the train option's own declaration, the
family's default space and how entries replace it, and one line for each bad entry."""

import math

import optuna
import pytest

from ganforge.errors import UserError
from ganforge.families import FAMILIES
from ganforge.sweep.space import CHOICE, FIXED, LOG, UNIFORM, parse_space, suggest, train_words


def _one(entry: str):
    (dim,) = parse_space([entry], ())
    return dim


def test_each_form_of_an_entry_parses_as_the_options_kind():
    gamma = _one("gamma=log:0.01..10")
    assert (gamma.how, gamma.values) == (LOG, (0.01, 10.0))
    freeze = _one("freeze-d=0..4")
    assert (freeze.how, freeze.values) == (UNIFORM, (0, 4)) and all(type(v) is int for v in freeze.values)
    assert (_one("aug=ada|noaug").how, _one("aug=ada|noaug").values) == (CHOICE, ("ada", "noaug"))
    assert _one("mirror=true|false").values == (True, False)
    assert (_one("batch=16").how, _one("batch=16").values) == (FIXED, (16,))
    assert _one("aug=ada|ada").how == FIXED  # one distinct value is no choice


def test_the_trials_values_become_train_flags_and_a_switch_set_false_gives_none():
    space = parse_space(["gamma=log:0.01..10", "freeze-d=0..4", "mirror=true|false", "batch=16", "no-report=true"], ())
    params = suggest(optuna.trial.FixedTrial({"gamma": 0.5, "freeze-d": 2, "mirror": False}), space)
    assert params == {"gamma": 0.5, "freeze-d": 2, "mirror": False, "batch": 16, "no-report": True}
    assert train_words(space, params) == ["--gamma", "0.5", "--freeze-d", "2", "--batch", "16", "--no-report"]


def test_a_whole_number_range_is_asked_as_integers_and_a_log_range_on_a_log_scale():
    space = parse_space(["freeze-d=0..4", "gamma=log:0.01..10"], ())
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        trial = study.ask()
        params = suggest(trial, space)
        assert type(params["freeze-d"]) is int and 0 <= params["freeze-d"] <= 4
        assert 0.01 <= params["gamma"] <= 10
        study.tell(trial, 0.0)
    assert study.trials[0].distributions["gamma"].log and not study.trials[0].distributions["freeze-d"].log


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_familys_default_space_is_valid_and_an_entry_replaces_its_default(family):
    default = FAMILIES[family].sweep_space
    space = parse_space([], default)
    assert [dim.text() for dim in space] == [dim.text() for dim in parse_space(default, ())]
    assert any(dim.name == "gamma" and dim.how == LOG for dim in space)
    replaced = parse_space(["gamma=2", "seed=1|2"], default)
    assert [d.text() for d in replaced if d.name in ("gamma", "seed")] == ["gamma=2", "seed=1|2"]
    assert len(replaced) == len(space) + 1


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("gamma", "--space 'gamma': write NAME=SPEC"),
        ("nonsense=1..2", "`ganforge train` has no option --nonsense"),
        ("kimg=1..2", "--kimg is set by the sweep for every trial"),
        ("gamma=log:nan..1", "'nan' is not a finite number"),
        ("gamma=log:0..1", "log: needs LOW > 0"),
        ("gamma=5..1", "LOW must be below HIGH"),
        ("gamma=-1..1", "--gamma -1: must be a finite number >= 0"),
        ("freeze-d=0.5..2", "'0.5' is not a whole number"),
        ("aug=ada|sometimes", "--aug sometimes: unknown; use one of"),
        ("mirror=0..1", "a range needs a numeric option"),
        ("mirror=maybe", "'maybe' is not true or false"),
        ("gamma=log:1", "log: needs LOW..HIGH"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it(entry, message):
    with pytest.raises(UserError) as raised:
        parse_space([entry], ())
    assert len(raised.value.problems) == 1 and message in raised.value.problems[0]


def test_every_bad_entry_is_listed_at_once():
    with pytest.raises(UserError) as raised:
        parse_space(["gamma=inf..1", "nope=1", "batch=8"], ())
    assert len(raised.value.problems) == 2
    assert not any(math.isnan(v) for v in parse_space(["gamma=0..1"], ())[0].values)
