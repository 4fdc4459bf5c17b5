"""`bench --data`: the images timed take the dataset's resolution, channels and (with --cond) labels, read by the
training reader; explicit flags that contradict it are errors naming both; every value says where it came from."""

import json
from pathlib import Path

import numpy as np
import PIL.Image
import pytest
from click.testing import CliRunner

from ganforge.bench.options import BenchOptions
from ganforge.bench.shape import choose_shape
from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.train.facts import DatasetFacts

GREY_8 = DatasetFacts(resolution=8, channels=1, label_dim=0, name="squares")
ARGS = ["bench", "--cfg", "tiny", "--steps", "1", "--warmup", "0", "--repeat", "1", "--device", "cpu", "--aug",
        "noaug", "--batch-gpu", "2"]  # fmt: skip


def _images(folder: Path, count: int = 4, res: int = 8, value: int = 80) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        img = np.full((res, res), value, np.uint8)
        img[0, 0] = i  # distinct images
        PIL.Image.fromarray(img).save(folder / f"{i}.png")
    return folder


def _shape(data: DatasetFacts | None = None, **options):
    return choose_shape(BenchOptions(**options), data)


def test_each_value_comes_from_the_flag_then_the_data_then_the_preset_then_the_default():
    shape = _shape(GREY_8, preset="tiny")
    assert (shape.resolution, shape.channels, shape.label_dim) == (8, 1, 0)
    assert shape.sources == {"resolution": "--data", "channels": "--data"} and shape.facts().name == "squares"
    shape = _shape(GREY_8, preset="tiny", resolution=8, channels=1)  # agreeing with --data
    assert shape.sources == {"resolution": "--resolution", "channels": "--channels"}
    shape = _shape(preset="paper256")
    assert (shape.resolution, shape.channels) == (256, 3) and shape.sources == {"resolution": "--cfg",
                                                                                 "channels": "default"}  # fmt: skip
    shape = _shape(preset="tiny")
    assert (shape.resolution, shape.sources["resolution"], shape.facts().name) == (256, "default", "synthetic")


def test_flags_that_contradict_the_data_are_each_an_error_naming_both():
    with pytest.raises(UserError) as caught:
        _shape(GREY_8, preset="tiny", resolution=16, channels=3)
    assert caught.value.problems == [
        "--resolution 16: --data squares holds 8x8 images; drop --resolution (the bench takes it from --data) or "
        "drop --data",
        "--channels 3: --data squares holds 1-channel images; drop --channels (the bench takes it from --data) or "
        "drop --data",
    ]
    with pytest.raises(UserError, match=r"--data squares holds 8x8 images: --cfg paper256 is made for 256"):
        _shape(GREY_8, preset="paper256")


def test_cond_takes_the_label_count_of_the_data_and_needs_labels():
    labelled = DatasetFacts(resolution=8, channels=1, label_dim=3, name="classes")
    assert _shape(labelled, preset="tiny", cond=True).label_dim == 3
    assert _shape(labelled, preset="tiny").label_dim == 0  # unconditional unless asked, as in training
    with pytest.raises(UserError, match="--cond: --data has no labels; build it with labels, or drop --cond"):
        _shape(GREY_8, preset="tiny", cond=True)
    with pytest.raises(UserError, match="--cond: give --data with labels, or drop --cond"):
        _shape(preset="tiny", cond=True)


def test_bench_data_times_the_datasets_shape_and_says_so(tmp_path):
    data = _images(tmp_path / "grey")
    result = CliRunner().invoke(main, [*ARGS, "--data", str(data), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    c = r["config"]
    assert (c["resolution"], c["channels"], c["sources"]) == (8, 1, {"resolution": "--data", "channels": "--data"})
    assert r["data"] == {"path": str(data), "name": "grey", "resolution": 8, "channels": 1, "label_dim": 0}
    table = CliRunner().invoke(main, [*ARGS, "--data", str(data)], catch_exceptions=False).stdout
    assert "images   8x8x1 like grey: resolution 8 from --data, channels 1 from --data; unconditional" in table
    defaults = CliRunner().invoke(main, [*ARGS, "--resolution", "8"], catch_exceptions=False).stdout
    assert "channels 3 by default (--channels or --data sets it)" in defaults


def test_bench_data_with_labels_and_cond_times_the_conditional_networks(tmp_path):
    from ganforge.data.build import BuildOptions, build

    for label, value in (("a", 60), ("b", 200)):
        _images(tmp_path / "src" / label, value=value)
    build(tmp_path / "src", tmp_path / "labelled.zip", BuildOptions(resolution=8, labels="folders", channels=1,
                                                                    workers=0))  # fmt: skip
    plain, cond = (
        json.loads(
            CliRunner()
            .invoke(main, [*ARGS, "--data", str(tmp_path / "labelled.zip"), "--json", *extra], catch_exceptions=False)
            .stdout
        )  # fmt: skip
        for extra in ([], ["--cond"])
    )
    assert (plain["config"]["label_dim"], cond["config"]["label_dim"], cond["data"]["label_dim"]) == (0, 2, 2)
    assert cond["config"]["G_params"] > plain["config"]["G_params"]  # the label embedding
    assert cond["config"]["D_params"] > plain["config"]["D_params"]  # the projection discriminator's


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "absent", "absent does not exist"),
        (
            lambda tmp: (tmp / "junk.zip").write_bytes(b"PK\x03\x04 not a zip") and tmp / "junk.zip",
            "not a readable zip",
        ),
        (lambda tmp: _images(tmp / "res8"), "--resolution 16: --data res8 holds 8x8 images"),
    ],
)
def test_bench_bad_data_exit_2_naming_the_flag(tmp_path, make, message):
    result = CliRunner().invoke(main, [*ARGS, "--resolution", "16", "--data", str(make(tmp_path))])
    assert result.exit_code == 2 and "error: --" in result.output and message in result.output, result.output
    assert "Traceback" not in result.output
