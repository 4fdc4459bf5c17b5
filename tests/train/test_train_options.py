"""`ganforge train`'s options: one dataclass field per click option, every default in one place, and `resolve` as the
only road from options to a Config (metric names parsed once, old config files still read)."""

import dataclasses
import json

import click
import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args

from ganforge.cli import main
from ganforge.cli.declared import declared_options
from ganforge.config import Config, maths_differences, maths_fields
from ganforge.data import open_dataset
from ganforge.metrics import parse_names
from ganforge.train.options import TRAIN_OPTIONS, TrainOptions


def _command() -> click.Command:
    return declared_options(TRAIN_OPTIONS)(click.Command("train"))  # appends the options to the command's params


def test_every_click_option_is_exactly_one_options_field():
    params = [p.name for p in _command().params]
    fields = [f.name for f in dataclasses.fields(TrainOptions)]
    assert len(params) == len(TRAIN_OPTIONS) == len(set(params))
    assert sorted(params) == sorted(fields)


def test_no_default_is_written_in_the_click_options_or_the_options_dataclass():
    """Defaults live in the Config fields and the preset table; here an option is None (or False for a switch) until
    given, and the help text reads the default from its one place."""
    command = _command()
    given = command.make_context("train", ["--data", "d", "--outdir", "o"]).params
    assert TrainOptions(**given) == TrainOptions(data="d", outdir="o")
    for field in dataclasses.fields(TrainOptions):
        if field.name not in ("data", "outdir"):
            assert field.default in (None, False) and given[field.name] is field.default, field.name
    help_texts = {p.name: p.help for p in command.params}
    assert "[default: 3]" in help_texts["keep_last"] and "[default: 2]" in help_texts["workers"]


def test_metrics_names_may_have_spaces_after_commas():
    assert parse_names(" fid50k_full, kid50k_full ,") == ["fid50k_full", "kid50k_full"]
    assert parse_names(["swd16k"]) == ["swd16k"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("options") / "squares")


def test_train_accepts_metric_names_with_spaces(data, tmp_path):
    args = tiny_args(data, tmp_path / "runs", dry_run=True) + ["--metrics", "fid50k_full, kid50k_full"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run"]["metrics"] == ["fid50k_full", "kid50k_full"]


def test_metrics_command_reads_names_with_spaces_the_same_way():
    """Without image sources the command lists every problem: the spaced names are known, only `nope` is not."""
    result = CliRunner().invoke(main, ["metrics", "--metrics", "fid50k_full, kid50k_full, nope"])
    assert result.exit_code == 2
    assert "unknown metric 'nope'" in result.output and "unknown metric ' kid50k_full'" not in result.output
    assert result.output.count("unknown metric") == 1


def test_config_files_from_before_the_preset_field_was_renamed_are_read(data, tmp_path):
    from ganforge.train import resolve

    cfg = resolve(TrainOptions(data=str(data), outdir=str(tmp_path), preset="tiny", device="cpu"))
    old = cfg.to_dict()
    old["cfg"] = old.pop("preset")
    assert Config.from_dict(old) == cfg
    # A checkpoint stores the flattened maths fields; one from an older ganforge lacks fields added since, which
    # count as their defaults (what it trained with).
    stored = maths_fields(old)
    del stored["loss.pl_decay"]
    assert "cfg" not in maths_fields(old) and maths_differences(stored, cfg.to_dict()) == []
    changed = dataclasses.replace(cfg, loss=dataclasses.replace(cfg.loss, pl_decay=0.5))
    assert maths_differences(stored, changed.to_dict()) == ["loss.pl_decay: 0.01 -> 0.5"]


def test_labels_are_left_out_of_a_dataset_opened_without_them(tmp_path):
    from ganforge.data.build import BuildOptions, build

    for label, brightness in (("a", 0.5), ("b", 0.9)):
        make_dataset(tmp_path / "src" / label, count=4, brightness=brightness)
    options = BuildOptions(resolution=8, labels="folders", channels=1, workers=0)
    build(tmp_path / "src", tmp_path / "labeled.zip", options)
    with_labels, without = open_dataset(tmp_path / "labeled.zip"), open_dataset(tmp_path / "labeled.zip", labels=False)
    assert with_labels.label_dim == 2 and with_labels[5][1].tolist() == [0.0, 1.0]
    assert without.label_dim == 0 and without[5][1].shape == (0,) and without.__getitems__([0, 5])[1].shape == (2, 0)
