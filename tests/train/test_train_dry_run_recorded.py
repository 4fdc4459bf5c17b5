"""The resolved configuration of every preset and of a table of option sets equals the one recorded before the
options were declared on the Config fields (tests/train/dry_runs_recorded.json, written in the layout of that time:
reading it through `upgrade`, as an old config.json is read, must give exactly today's Config; a field added since,
like --freeze-d's, at its default). Two deliberate changes since: a fine-tuning start (`stylegan3-r-finetune`) has no
EMA ramp-up and ADA's speed is 100 kimg, as the released setups resume from a network; `--cfg cifar` trains the
official plain D (its records state model.d_arch "orig"; the layouts older runs were built with are filled in by
`upgrade`); the `tiny` and `tiny3` rows move ADA's p from 0 to 1 in 20 kimg, within their 40 kimg runs, not the
paper's 500 (under which p could reach only 0.08, as their own small-data warning said)."""

import dataclasses
import json
from pathlib import Path
from unittest import mock

import pytest
from train_helpers import weights_found

from ganforge.config import Config, field_defaults, flatten, upgrade
from ganforge.config.describe import describe_derived
from ganforge.presets import PRESETS
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve

RECORDED = json.loads((Path(__file__).parent / "dry_runs_recorded.json").read_text())


def test_every_preset_is_recorded():
    assert {f"preset-{name}" for name in PRESETS} <= set(RECORDED)


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_dry_run_config_equals_the_recorded_one(case):
    record = RECORDED[case]
    options = TrainOptions(data="/data/shapes.zip", outdir="/nonexistent/runs", **record["options"])
    facts = Facts(DatasetFacts(**record["facts"]), record["world_size"], record["device_type"])
    if (options.resume or "").endswith(".safetensors"):  # as observe finds pretrained files of that architecture
        facts = dataclasses.replace(facts, found=weights_found(options.resume, Config.from_dict(record["config"])))
    with mock.patch("ganforge.devices.cpu_flags", return_value=frozenset()):
        cfg = resolve(options, facts)
    recorded, now = flatten(upgrade(record["config"])), flatten(json.loads(cfg.to_json()))
    added = {key: value for key, value in now.items() if key not in recorded}  # options declared since: at default
    assert now == recorded | added and added == {key: flatten(field_defaults())[key] for key in added}
    assert Config.from_dict(record["config"]) == cfg  # an old config.json reads as today's Config
    assert describe_derived(cfg) == record["derived"]
