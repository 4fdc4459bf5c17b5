"""Shards read over real servers on loopback: HTTP (byte ranges, dropped connections, outages, missing shards) and
moto's S3; the same batches as from the local folder."""

import pytest
import torch
from data_testfiles import png

from ganforge.data import build, open_dataset, remote
from ganforge.data.loader import make_loader
from ganforge.data.shardset import ShardDataset
from ganforge.errors import UserError
from server_helpers import http_server, s3_server, upload

FAST_RETRIES = (0.01, 0.01, 0.01)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """16 labelled 16 px images as PNG shards of 2 or 3 images."""
    root = tmp_path_factory.mktemp("source")
    for index in range(16):
        (root / ("a" if index % 2 else "b")).mkdir(exist_ok=True)
        (root / ("a" if index % 2 else "b") / f"{index}.png").write_bytes(png(index))
    dest = tmp_path_factory.mktemp("shards") / "set"
    options = build.BuildOptions(transform="none", labels="folders", workers=0, format="shards", shard_size="6KB")
    build.build(root, dest, options)
    return dest


def _batches(dataset, count: int = 6) -> list[tuple[torch.Tensor, torch.Tensor]]:
    loader = make_loader(dataset, 4, seed=3, workers=2)
    return [next(loader) for _ in range(count)]


def _same(left, right) -> bool:
    return all(torch.equal(a, b) and torch.equal(c, d) for (a, c), (b, d) in zip(left, right, strict=True))


def test_http_gives_the_local_batches_and_survives_dropped_connections(folder):
    local = _batches(open_dataset(folder, labels=True))
    with http_server(folder) as server:
        over_http = open_dataset(server.url + "/", labels=True)
        assert (over_http.num_raw, over_http.label_names) == (16, ["a", "b"])
        assert _same(_batches(over_http), local)
        # Read in 2 KB requests, every shard's first two answers and its first answer past byte 0 stop halfway and
        # close the connection: the reads are retried from the byte they had reached; the batches do not change.
        shard_names = [shard["name"] for shard in over_http.shards]
        server.drops.update({name: 2 for name in shard_names})
        server.mid_drops.update({name: 1 for name in shard_names})
        flaky = ShardDataset(server.url, delays=FAST_RETRIES, block=2048)
        assert _same(_batches(flaky), local)
        dropped = [name for name, _ in server.requests if name in shard_names]
        assert len(dropped) > len(set(dropped)), "the server dropped no connection"
        assert any(start > 0 for name, start in server.requests if name in shard_names), "no read resumed mid-shard"


def test_an_outage_and_a_missing_shard_are_clear_errors(folder, tmp_path):
    with http_server(folder) as server:
        dataset = ShardDataset(server.url, delays=FAST_RETRIES)
        server.drops[dataset.shards[0]["name"]] = 100
        with pytest.raises(
            UserError, match=r"shard-000000.tar: still unreadable after 4 tries.*rerun the same command"
        ):
            list(dataset.samples(0))
    for path in folder.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "shard-000001.tar").unlink()
    with http_server(tmp_path) as server:
        dataset = ShardDataset(server.url, delays=FAST_RETRIES)
        with pytest.raises(UserError, match=r"shard-000001.tar: missing \(the shard dataset is incomplete"):
            list(dataset.samples(1))
        with pytest.raises(UserError, match=r"--data: .*/nothing/index.json: missing; a shard dataset is a folder"):
            open_dataset(server.url + "/nothing")


def test_s3_gives_the_local_batches(folder, monkeypatch):
    pytest.importorskip("s3fs")
    local = _batches(open_dataset(folder))
    with s3_server(monkeypatch) as endpoint:
        upload(endpoint, "datasets", folder, "faces/v1")
        dataset = open_dataset("s3://datasets/faces/v1")
        assert (dataset.num_raw, dataset.name) == (16, "v1")
        assert _same(_batches(dataset), local)
        with pytest.raises(UserError, match=r"s3://datasets/other/index.json: missing"):
            open_dataset("s3://datasets/other")


def test_unknown_protocols_and_missing_packages_are_named():
    with pytest.raises(UserError, match=r"--data: nosuch://bucket/x: not a URL fsspec can read \(Protocol not known"):
        remote.filesystem("nosuch://bucket/x", "--data")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(
            UserError, match=r"--data: reading gs:// needs its fsspec package: pip install 'ganforge\[gcs\]'"
        ):
            remote.filesystem("gs://bucket/x", "--data")


def test_webdataset_reads_our_shards(folder):
    """The shards are standard WebDataset shards: its own reader finds every sample with its image and label."""
    webdataset = pytest.importorskip("webdataset")
    urls = [str(path) for path in sorted(folder.glob("shard-*.tar"))]
    samples = list(webdataset.WebDataset(urls, shardshuffle=False))
    assert len(samples) == 16
    assert all(set(sample) >= {"__key__", "png", "json"} for sample in samples)
    assert sorted(sample["__key__"] for sample in samples) == [f"{i:08d}" for i in range(16)]
