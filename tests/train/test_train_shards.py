"""Training from shards streamed over HTTP: stopped and continued, it writes the checkpoint an uninterrupted run
writes, byte for byte; its checkpoints hold the stream's layout, and a resume with another world size starts a new
stream, saying so; a server that fails mid-run stops it with one line, after a checkpoint."""

import json
import re

import pytest
import torch
from click.testing import CliRunner
from train_helpers import continued_equals_straight, final_checkpoint, make_dataset, tiny_args

from ganforge.cli import main
from ganforge.data import build, open_dataset, remote_limits
from ganforge.data.source import DataSource
from hostile_server import hostile_server
from server_helpers import http_server


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    images = make_dataset(root / "images", count=40)
    options = build.BuildOptions(transform="none", channels=1, workers=0, format="shards", shard_size="2KB")
    build.build(images, root / "set", options)
    return root / "set"


def test_a_run_streamed_over_http_stops_and_continues_bitwise(shards, tmp_path):
    with http_server(shards) as server:

        def train(outdir, kimg: float):
            args = tiny_args(server.url, outdir, kimg=kimg, batch=8, shuffle_buffer=4, mirror=True)
            result = CliRunner().invoke(main, args, catch_exceptions=False)
            assert result.exit_code == 0, result.output

        # 40 images in shards of 2 or 3: the stop at 24 images lands inside a shard and the run goes on past a pass
        final = continued_equals_straight(train, tmp_path, 0.056, stop_kimg=0.024)
    state = json.loads((final / "state.json").read_text())["state"]
    assert state["sampler"] == {"position": 56, "stream": {"origin": 0, "world_size": 1}}
    assert final_checkpoint(tmp_path / "straight").name == "ckpt-000000056"


def _restored(dataset, world_size: int, state: dict | None, said: list) -> dict:
    """The sampler state of a data source restored from `state` (None: a fresh run), once opened."""
    data = DataSource(dataset, world_size)
    if state is not None:
        data.load_state_dict(state)
    data.open(8 // world_size, 0, 0, 0, "cpu", said.append, 4)
    return data.state_dict()


def test_a_new_world_size_starts_a_new_stream_and_says_so(shards):
    dataset = open_dataset(shards)
    said = []
    saved = {"position": 64, "stream": {"origin": 16, "world_size": 2}}
    assert _restored(dataset, 2, saved, said) == saved
    assert _restored(dataset, 4, None, said) == {"position": 0, "stream": {"origin": 0, "world_size": 4}}
    assert said == []
    assert _restored(dataset, 4, saved, said) == {"position": 64, "stream": {"origin": 64, "world_size": 4}}
    assert said == [
        "data: 4 process(es) now, 2 when the checkpoint was written; the shards are dealt afresh and the stream "
        "starts a new pass at 0.064 kimg"
    ]
    zipped = {"position": 64}  # a checkpoint of a run that read other data keeps the count only
    assert _restored(dataset, 1, zipped, said) == {"position": 64, "stream": {"origin": 64, "world_size": 1}}
    assert _restored(open_dataset(shards.parent / "images"), 4, saved, said) == {"position": 64}
    assert len(said) == 1


def test_the_data_source_owns_its_position(shards):
    """Each batch taken moves the position past the global batch, from where a checkpoint stood; the stream read
    after a restore is the one the source that never stopped reads."""
    dataset = open_dataset(shards)
    straight = DataSource(dataset, 1)
    straight.open(8, 0, 0, 0, "cpu", print, 4)
    batches = [next(straight)[0] for _ in range(5)]
    assert straight.state_dict() == {"position": 40, "stream": {"origin": 0, "world_size": 1}}
    resumed = DataSource(dataset, 1)
    resumed.load_state_dict({"position": 24, "stream": {"origin": 0, "world_size": 1}})
    resumed.open(8, 0, 0, 0, "cpu", print, 4)
    assert all(torch.equal(next(resumed)[0], batch) for batch in batches[3:])
    assert resumed.state_dict()["position"] == 40


def test_a_server_failing_mid_run_stops_it_with_one_line_after_a_checkpoint(shards, tmp_path, monkeypatch):
    """Each shard is served well twice (the reals grid, the first pass), then never ends: the second pass stops the
    run with the line naming the shard and what the server did, after a checkpoint of the progress made since the
    last tick's."""
    monkeypatch.setenv(remote_limits.ENVIRONMENT, "read=0.3,request=1,patience=0.5")
    with hostile_server(shards) as server:
        url = server.url_for("endless.tar@2")
        args = tiny_args(url, tmp_path, kimg=0.08, batch=8, tick=0.024, snap=10)
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert re.fullmatch(rf"error: --data: {re.escape(url)}/shard-\d+\.tar: the server sends more than .*", errors[0])
    assert len(errors) == 1 and "dataset verify" not in result.output  # the server's line alone: nothing to verify
    images = int(final_checkpoint(tmp_path).name.split("-")[1])
    assert 24 < images < 80 and images % 24 != 0, images  # past the first tick, and not a tick's checkpoint
    (run,) = tmp_path.iterdir()
    assert errors[0].removeprefix("error: ") in (run / "log.txt").read_text()
