"""Shards read over real servers on loopback: HTTP (byte ranges, dropped connections, outages, missing shards) and
moto's S3, the same batches as from the local folder; and a hostile server (tests/hostile_server.py), each of whose
misbehaviours ends in one line within the limits."""

import re
import time

import pytest
import torch
from data_testfiles import png

from ganforge.data import build, fetch, open_dataset, remote, remote_limits, shards
from ganforge.data.loader import make_loader
from ganforge.data.remote_limits import Limits
from ganforge.data.shardset import ShardDataset
from ganforge.errors import UserError
from hostile_server import hostile_server
from server_helpers import http_server, s3_server, upload

FAST_RETRIES = Limits(delays=(0.01, 0.01, 0.01))


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
        flaky = ShardDataset(server.url, limits=FAST_RETRIES, block=2048)
        assert _same(_batches(flaky), local)
        dropped = [name for name, _ in server.requests if name in shard_names]
        assert len(dropped) > len(set(dropped)), "the server dropped no connection"
        assert any(start > 0 for name, start in server.requests if name in shard_names), "no read resumed mid-shard"


def test_an_outage_and_a_missing_shard_are_clear_errors(folder, tmp_path):
    with http_server(folder) as server:
        dataset = ShardDataset(server.url, limits=FAST_RETRIES)
        server.drops[dataset.shards[0]["name"]] = 100
        with pytest.raises(
            UserError,
            match=r"shard-000000.tar: dropped the connection .*; gave up after 4 tries.*rerun the same command",
        ):
            list(dataset.samples(0))
    for path in folder.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "shard-000001.tar").unlink()
    with http_server(tmp_path) as server:
        dataset = ShardDataset(server.url, limits=FAST_RETRIES)
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
        remote.filesystem("nosuch://bucket/x", "--data", Limits())
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(
            UserError, match=r"--data: reading gs:// needs its fsspec package: pip install 'ganforge\[gcs\]'"
        ):
            remote.filesystem("gs://bucket/x", "--data", Limits())


def test_webdataset_reads_our_shards(folder):
    """The shards are standard WebDataset shards: its own reader finds every sample with its image and label."""
    webdataset = pytest.importorskip("webdataset")
    urls = [str(path) for path in sorted(folder.glob("shard-*.tar"))]
    samples = list(webdataset.WebDataset(urls, shardshuffle=False))
    assert len(samples) == 16
    assert all(set(sample) >= {"__key__", "png", "json"} for sample in samples)
    assert sorted(sample["__key__"] for sample in samples) == [f"{i:08d}" for i in range(16)]


# ---- hostile servers: every misbehaviour ends in one line naming the URL, what the server did and the limit -------

# Short limits, so that a silent or dripping server costs a fraction of a second (the defaults allow minutes).
SHORT = Limits(connect_s=1.0, read_s=0.2, request_s=0.8, patience_s=0.3, delays=(0.05,) * 5)


@pytest.fixture(scope="module")
def hostile(folder):
    with hostile_server(folder) as server:
        yield server


def _shard_failure(url: str, **options) -> str:
    """The one problem reading every shard of the dataset at `url` ends in (UserError), within the short limits."""
    start = time.monotonic()
    with pytest.raises(UserError) as raised:
        dataset = ShardDataset(url, limits=SHORT, **options)
        for number in range(len(dataset.shards)):
            list(dataset.samples(number))
    # Within the limits' worst case (six tries of a 0.8 s request), not at the test's 30 s time-out: the message
    # then says which limit held it (a busy machine took over 3 s for an endless shard)
    assert time.monotonic() - start < 10, "a hostile server held the reader past its limits"
    assert len(raised.value.problems) == 1, raised.value.problems
    return raised.value.problems[0]


@pytest.mark.parametrize(
    "mode, message",
    [
        ("endless.tar", r"/shard-000000.tar: the server sends more than a request for bytes 0-\d+ holds"),
        # within the patience of 0.3 s: one or two tries, however loaded the machine (without it: six)
        ("silent", r"/index.json: silent for 0.2 s \(the read time-out\); gave up after [12] tr(y|ies) in [01] s\."),
        ("drip", r"/index.json: not done within 0.8 s \(the deadline of one request\)"),
        (
            "wrong-length.json",
            r"/index.json: the server ignores byte ranges: .* HTTP 200, the whole file \(1125899906842624 bytes\)",
        ),
        ("redirect-loop", r"/index.json: the server redirects more than 10 times"),
        ("error-500", r"/index.json: answered HTTP 500, which says to come back later; gave up after \d tries"),
        ("huge-headers", r"/index.json: the server's answer is not HTTP within this client's limits"),
        ("gzip-bomb", r"/index.json: the server sent the file gzip-encoded though asked for its bytes as stored"),
        ("silent.tar@1", r"/shard-000000.tar: silent for 0.2 s"),  # each shard's first read passes, the next not
    ],
)
@pytest.mark.timeout(30)  # a reader without its deadline would take minutes over the dripping server
def test_a_misbehaving_server_is_one_line_naming_what_it_did(hostile, mode, message):
    if "@" in mode:  # each shard's first GET is answered well: read them all once, then the next read fails
        assert len(list(ShardDataset(hostile.url_for(mode), limits=SHORT).first(16))) == 16
    problem = _shard_failure(hostile.url_for(mode))
    assert re.match("--data: " + re.escape(hostile.url_for(mode)) + message, problem), problem


def test_a_shard_is_asked_for_its_declared_bytes_only_and_ranges_are_required(hostile, folder):
    dataset = ShardDataset(hostile.url_for("ok"), limits=SHORT, block=2048)
    sizes = {shard["name"]: shard["bytes"] for shard in dataset.shards}
    hostile.requests.clear()
    for number in range(len(dataset.shards)):
        list(dataset.samples(number))
    asked = [(path, asked) for _, path, asked in hostile.requests if path in sizes]
    blocks = {
        (name, (first, min(first + 2048, size) - 1)) for name, size in sizes.items() for first in range(0, size, 2048)
    }
    # each block once, and no more (a shard's last blocks, its end-of-archive padding, need not be read)
    assert len(set(asked)) == len(asked) and set(asked) <= blocks
    assert {name for name, _ in asked} == set(sizes)
    # A server that ignores Range serves a file whole, which is right for the first block only.
    problem = _shard_failure(hostile.url_for("no-range.tar"), block=2048)
    assert (
        "shard-000000.tar: the server ignores byte ranges: it answered a request for bytes 0-2047 with HTTP 200"
        in problem
    )
    assert list(ShardDataset(hostile.url_for("no-range.tar"), limits=SHORT).first(16))  # shards of one block: fine


def test_a_body_is_never_read_past_its_range_and_the_index_has_a_cap(hostile, folder):
    fs, path = remote.filesystem(hostile.url_for("endless"), None, SHORT)
    into = fetch.Received()
    with pytest.raises(fetch.Refused, match="the server sends more than a request for bytes 0-9999 holds"):
        fetch.read_into(fs, path + "/index.json", into, 0, 10_000, SHORT)
    assert into.size == len(into.joined()) == 10_000
    # index.json is asked for the most bytes an index may take and one more, and refused when it has that one
    hostile.requests.clear()
    ShardDataset(hostile.url_for("ok"), limits=SHORT)
    assert hostile.requests == [("ok", "index.json", (0, shards.index_cap()))]
    fs, path = remote.filesystem(hostile.url_for("ok"), None, SHORT)
    with pytest.raises(UserError, match=r"index.json: more than the 100 bytes such a file may take"):
        remote.read_whole(fs, path + "/index.json", 100, "index.json", SHORT)


def test_a_server_that_is_down_is_unreachable_not_missing(folder):
    with hostile_server(folder) as server:
        url = server.url_for("ok")
    problem = _shard_failure(url)
    assert problem.startswith(f"--data: {url}/index.json: unreachable (the connection was refused"), problem
    assert "missing" not in problem


def test_messages_show_the_url_without_its_secrets(hostile):
    url = hostile.url.replace("http://", "http://alice:hunter2@") + "/silent/"
    problem = _shard_failure(url)
    assert "alice" not in problem and "hunter2" not in problem
    assert problem.startswith(f"--data: {hostile.url}/silent/index.json: silent for"), problem


def test_s3_reads_are_bounded_alike(hostile, monkeypatch):
    """The hostile server as an S3 endpoint (path-style requests: s3://MODE/KEY): the same refusals."""
    s3fs = pytest.importorskip("s3fs")
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": hostile.url}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    s3fs.S3FileSystem.clear_instance_cache()  # a client made for another endpoint is not reused
    try:
        assert "sends more than a request for bytes 0-" in _shard_failure("s3://endless.tar")
        assert "index.json: silent for 0.2 s" in _shard_failure("s3://silent")
        assert "with HTTP 200, the whole file (1125899906842624 bytes)" in _shard_failure("s3://wrong-length.json")
    finally:
        s3fs.S3FileSystem.clear_instance_cache()


def test_the_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv(remote_limits.ENVIRONMENT, "read=120, request=1800")
    assert remote_limits.from_environment() == Limits(read_s=120.0, request_s=1800.0)
    monkeypatch.setenv(remote_limits.ENVIRONMENT, "read=0,wait=3,connect=inf,patience=x")
    with pytest.raises(UserError) as raised:
        remote_limits.from_environment()
    expected = "is not NAME=SECONDS with NAME one of connect, read, request, patience and SECONDS above 0 and at most"
    items = ("read=0", "wait=3", "connect=inf", "patience=x")
    assert raised.value.problems == [f"GANFORGE_REMOTE_LIMITS: {item!r} {expected} 86400" for item in items]
