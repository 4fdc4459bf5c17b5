"""`dataset build --format shards`, the shard index, `dataset info/verify` of shards, and the stream's order."""

import hashlib
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from data_testfiles import png

from ganforge.cli import main
from ganforge.data import build, check, open_dataset, shards, stream
from ganforge.data.loader import make_loader
from ganforge.errors import UserError
from server_helpers import http_server

COUNT = 24


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """24 distinct 16 px images in two class folders."""
    root = tmp_path_factory.mktemp("source")
    for index in range(COUNT):
        folder = root / ("cat" if index % 3 else "dog")
        folder.mkdir(exist_ok=True)
        (folder / f"{index:03d}.png").write_bytes(png(index))
    return root


@pytest.fixture(scope="module")
def built(source, tmp_path_factory):
    """The same images as a zip, as PNG shards of about 6 KB (2 or 3 images each) with labels, and as raw shards."""
    out = tmp_path_factory.mktemp("built")
    options = {"transform": "none", "labels": "folders", "workers": 0}
    build.build(source, out / "data.zip", build.BuildOptions(**options))
    build.build(source, out / "png", build.BuildOptions(**options, format="shards", shard_size="6KB"))
    raw = build.BuildOptions(**options, format="shards", shard_size="2KB", shard_encoding="u8")
    build.build(source, out / "u8", raw)
    return out


def _digests(images) -> list[str]:
    return sorted(hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest() for image in images)


def _stream_batches(dataset, batches: int, **kwargs) -> list[torch.Tensor]:
    loader = make_loader(dataset, 4, seed=kwargs.pop("seed", 7), workers=kwargs.pop("workers", 0), **kwargs)
    return [next(loader) for _ in range(batches)]


def test_build_writes_every_image_once_with_its_class(built):
    zipped, sharded, raw = (open_dataset(built / name) for name in ("data.zip", "png", "u8"))
    assert sharded.format == raw.format == "shards" and len(sharded.shards) > 6
    assert (sharded.num_raw, sharded.resolution, sharded.channels, sharded.label_names) == (
        COUNT,
        16,
        3,
        ["cat", "dog"],
    )
    reference = {hashlib.sha256(zipped[i][0].numpy().tobytes()).hexdigest(): zipped[i][1] for i in range(COUNT)}
    for dataset in (sharded, raw):
        pairs = list(dataset.first(COUNT))
        assert _digests(image for image, _ in pairs) == sorted(reference)
        for image, label in pairs:  # each image keeps its class
            assert torch.equal(reference[hashlib.sha256(image.tobytes()).hexdigest()], torch.from_numpy(label))
        assert dataset.class_counts.tolist() == [16, 8]
    index = json.loads((built / "png" / "index.json").read_text())
    assert [entry["name"] for entry in index["shards"]] == [shards.shard_name(i) for i in range(len(index["shards"]))]
    assert sum(entry["count"] for entry in index["shards"]) == COUNT
    # written in a fixed shuffle, not in class order: the first shards already hold both classes
    first_classes = [label.argmax() for _, label in sharded.first(8)]
    assert 0 < sum(first_classes) < 8


def test_build_is_byte_identical_and_refuses_bad_options(source, built, tmp_path):
    options = build.BuildOptions(transform="none", labels="folders", workers=2, format="shards", shard_size="6KB")
    build.build(source, tmp_path / "again", options)
    for path in (built / "png").iterdir():
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name
    cases = {
        "--shard-size: 'huge' is not a size": {"format": "shards", "shard_size": "huge"},
        "--shard-size: '12' is not between": {"format": "shards", "shard_size": "12"},
        "--shard-size: only with --format shards": {"format": "fast", "shard_size": "1GB"},
        "--shard-encoding: only with --format shards": {"shard_encoding": "u8"},
    }
    for message, bad in cases.items():
        with pytest.raises(UserError, match=message):
            build.build(source, tmp_path / "bad", build.BuildOptions(transform="none", **bad))
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad.partial").exists()


def test_info_and_verify_name_the_damaged_shard(built, tmp_path):
    summary = check.info(built / "png")
    assert (summary["format"], summary["count"], summary["content_hash_kind"]) == ("shards", COUNT, "pixels")
    assert summary["labels"] == {"kind": "classes", "counts": {"cat": 16, "dog": 8}}
    assert check.verify(built / "png", workers=2)["hash_checked"]
    assert check.verify(built / "u8", workers=0)["hash_checked"]
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for path in (built / "png").iterdir():
        (damaged / path.name).write_bytes(path.read_bytes())
    shard = damaged / shards.shard_name(2)
    data = bytearray(shard.read_bytes())
    data[600] ^= 0xFF  # inside the first image's PNG data
    shard.write_bytes(bytes(data))
    with pytest.raises(UserError) as error:
        check.verify(damaged, workers=0)
    assert any(shards.shard_name(2) in problem for problem in error.value.problems), error.value.problems


SECRET = "PLANTEDsecret"


def test_a_url_with_credentials_is_read_with_them_and_shown_without(built):
    """Credentials and a signed query in a shard URL: every file is requested with the query, the dataset in memory
    keeps the whole URL, and what is shown (`dataset info`, an error, the dataset's name) holds none of it."""
    with http_server(built) as server:
        url = server.url.replace("http://", f"http://reader:{SECRET}@") + f"/png/?X-Amz-Signature={SECRET}"
        dataset = open_dataset(url)
        pixels, _ = next(dataset.first(1))
        assert dataset.path == url and dataset.name == "png" and pixels.shape == (3, 16, 16)
        assert open_dataset(url.replace("/png/?", "/png/index.json?")).num_raw == COUNT  # the index named
        info = CliRunner().invoke(main, ["dataset", "info", url])
        missing = CliRunner().invoke(main, ["dataset", "info", url.replace("/png/", "/gone/")])
        requested = list(server.paths)
    assert requested and all(path.endswith(f"?X-Amz-Signature={SECRET}") for path in requested)
    assert info.exit_code == 0 and f"path: {server.url}/png/?X-Amz-Signature=REDACTED\n" in info.output
    assert missing.exit_code == 2 and f"{server.url}/gone/index.json?X-Amz-Signature=REDACTED" in missing.output
    assert SECRET not in info.output + missing.output


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda index: index.update(format="other"), "not a ganforge shard index"),
        (lambda index: index.update(count=10**11), "count is not"),
        (lambda index: index.update(resolution=12), "resolution is not"),
        (lambda index: index.update(encoding="jpeg"), "encoding is not"),
        (lambda index: index.update(channels=float("nan")), "channels is not"),
        (lambda index: index["shards"][0].update(name="../../etc/passwd"), "shard entry 0"),
        (lambda index: index["shards"][1].update(count=-1), "shard entry 1"),
        (lambda index: index["shards"][0].update(classes=[1, 10**12]), "shard entry 0"),
        (lambda index: index["shards"][0]["classes"].append(index["shards"][0]["classes"].pop() + 1), "shard entry 0"),
        (lambda index: index["shards"].append(dict(index["shards"][0])), "share a name"),
        (lambda index: index.update(count=index["count"] + 1), "not the 25 of count"),
        (lambda index: index.update(shards=[]), "shards is not a list"),
        (lambda index: index.update(label_names=["x"] * 3), "repeats a name"),
    ],
)
def test_a_hostile_index_is_refused_with_its_problem(built, tmp_path, edit, message):
    index = json.loads((built / "png" / "index.json").read_text())
    edit(index)
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        open_dataset(tmp_path)


def test_a_shard_that_disagrees_with_its_index_is_named(built, tmp_path):
    for path in (built / "png").iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    index = json.loads((tmp_path / "index.json").read_text())
    first, second = index["shards"][0], index["shards"][1]
    held = first["count"]
    for shard, change in ((first, 1), (second, -1)):  # one image moved in the index only, class counts kept whole
        shard["count"] += change
        shard["classes"][int(np.argmax(shard["classes"]))] += change
    (tmp_path / "index.json").write_text(json.dumps(index))
    dataset = open_dataset(tmp_path)
    with pytest.raises(UserError, match=rf"shard-000000.tar: holds {held} samples, index.json lists {held + 1}"):
        list(dataset.samples(0))
    with pytest.raises(UserError, match=rf"shard-000001.tar: holds more than the {second['count']} samples"):
        list(dataset.samples(1))
    cut = tmp_path / shards.shard_name(2)
    cut.write_bytes(cut.read_bytes()[:1500])
    with pytest.raises(UserError, match=r"shard-000002.tar: ends before byte .* the shard is cut short"):
        list(dataset.samples(2))
    (tmp_path / shards.shard_name(3)).unlink()
    with pytest.raises(UserError, match=r"shard-000003.tar: missing"):
        list(dataset.samples(3))


def test_shard_plan_is_a_bounded_shuffle():
    rng = np.random.default_rng(0)
    for count, buffer in ((1, 1), (5, 1), (5, 100), (300, 16), (64, 64)):
        order = stream.shard_plan(count, buffer, np.random.default_rng(rng.integers(2**32)))
        assert sorted(order.tolist()) == list(range(count))
        # the k-th to leave left when sample k + buffer arrived, or at the end: never a sample not yet read
        assert all(order[k] < k + buffer for k in range(count)), (count, buffer)
    assert stream.shard_plan(5, 1, np.random.default_rng(0)).tolist() == [0, 1, 2, 3, 4]
    shuffled = stream.shard_plan(300, 16, np.random.default_rng(1))
    assert (shuffled != np.arange(300)).mean() > 0.9


def test_ranks_read_disjoint_shards_and_every_shard_each_pass():
    for world in (1, 2, 3):
        for epoch in range(3):
            parts = [stream.rank_shards(10, 5, 0, epoch, rank, world) for rank in range(world)]
            together = np.concatenate(parts)
            assert sorted(together.tolist()) == list(range(10)) and len(together) == 10
    assert not np.array_equal(stream.rank_shards(10, 5, 0, 0, 0, 1), stream.rank_shards(10, 5, 0, 1, 0, 1))
    assert not np.array_equal(stream.rank_shards(10, 5, 0, 0, 0, 1), stream.rank_shards(10, 5, 64, 0, 0, 1))


def test_stream_resumes_exactly_anywhere(built):
    """A stream started at position p equals the tail of a stream started at 0: mid-shard, at a shard's start,
    across passes, with the mirror's flips, for each of two ranks."""
    dataset = open_dataset(built / "png", mirror=True)
    for rank in (0, 1):
        straight = torch.cat([images for images, _ in _stream_batches(dataset, 20, rank=rank, world_size=2)])
        assert len(_digests(straight[:12])) == 12
        for step in (1, 3, 7, 13):
            start = step * 8  # two ranks of 4 images a step
            resumed = _stream_batches(dataset, 20 - step, rank=rank, world_size=2, start=start)
            assert torch.equal(torch.cat([images for images, _ in resumed]), straight[step * 4 :]), (rank, step)
    # the mirror flips about half of the images, and the workers change nothing
    plain = open_dataset(built / "png")
    flipped = torch.cat([images for images, _ in _stream_batches(dataset, 6)])
    unflipped = torch.cat([images for images, _ in _stream_batches(plain, 6)])
    same = [torch.equal(a, b) for a, b in zip(flipped, unflipped, strict=True)]
    assert [torch.equal(a.flip(-1), b) for a, b in zip(flipped, unflipped, strict=True)] == [not s for s in same]
    assert 4 < sum(same) < 20
    threaded = torch.cat([images for images, _ in _stream_batches(dataset, 6, workers=3)])
    assert torch.equal(threaded, flipped)
    # positions inside a shard (batches of 4 start at shard boundaries here): the shard's first samples are skipped
    items = stream.stream(dataset, 7, 0, 2, origin=0, position=0)
    straight_items = [next(items)[:3] for _ in range(30)]
    for position in (1, 5, 11):
        items = stream.stream(dataset, 7, 0, 2, origin=0, position=position)
        assert [next(items)[:3] for _ in range(30 - position)] == straight_items[position:], position


def test_each_pass_of_one_rank_sees_its_shards_once(built):
    dataset = open_dataset(built / "png")
    counts = [shard["count"] for shard in dataset.shards]
    for rank in (0, 1):
        first_pass = sum(counts[n] for n in stream.rank_shards(len(counts), 7, 0, 0, rank, 2))
        items = stream.stream(dataset, 7, rank, 2, origin=0, position=0)
        images = [next(items)[0] for _ in range(first_pass)]
        expected = [image for n in stream.rank_shards(len(counts), 7, 0, 0, rank, 2) for image, _ in dataset.samples(n)]
        assert sorted(images) == sorted(expected)


def test_more_processes_than_shards_is_refused(built):
    dataset = open_dataset(built / "png")
    with pytest.raises(UserError, match=r"shard\(s\) for 64 processes.*--shard-size 256MB"):
        next(stream.stream(dataset, 0, 0, 64, origin=0, position=0))


def test_a_greyscale_dataset_converted_to_another_format_stays_greyscale(source, tmp_path):
    """Without --channels a build keeps the channels SRC's dataset.json records (it made RGB of a greyscale zip, and
    counted that dataset.json as an ignored file); a recorded value that is not 1 or 3 is RGB's default."""
    options = {"transform": "none", "labels": "none", "workers": 0}
    build.build(source, tmp_path / "grey.zip", build.BuildOptions(**options, channels=1))
    result = CliRunner().invoke(main, ["dataset", "build", str(tmp_path / "grey.zip"), str(tmp_path / "grey"),
                                       "--format", "shards", "--transform", "none", "--workers", "0"])  # fmt: skip
    assert result.exit_code == 0 and "ignored" not in result.output, result.output
    zipped, sharded = open_dataset(tmp_path / "grey.zip"), open_dataset(tmp_path / "grey")
    assert zipped.channels == sharded.channels == 1
    assert _digests(image for image, _ in sharded.first(COUNT)) == _digests(zipped[i][0].numpy() for i in range(COUNT))
    for recorded, kept in ((1, 1), (3, 3), (True, 3), (1.0, 3), ("1", 3), (2, 3)):
        assert build.source_channels({"ganforge": {"channels": recorded}}) == kept
    assert build.source_channels(None) == build.source_channels({"ganforge": []}) == 3
