"""Label vectors (multi-hot and continuous) from a CSV with named columns or SRC's dataset.json, through every
format: build, read, info, verify, the shard stream, and every problem of a label file listed once."""

import hashlib
import json
import zipfile

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from data_testfiles import png, write_folder

from ganforge.cli import main
from ganforge.data import build, check, distribution, shards
from ganforge.data.archive import open_dataset
from ganforge.data.loader import make_loader
from ganforge.errors import UserError

COUNT = 12
COLUMNS = ["smiling", "glasses", "age"]


def _vector(index: int) -> list[float]:
    """Two multi-hot entries and a continuous one, distinct per image."""
    return [index % 2, (index // 2) % 2, round(0.37 * index - 1.5, 2)]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("vectors")
    write_folder(root / "src", {f"img{i:02d}.png": png(i, 8) for i in range(COUNT)})
    rows = ["file," + ",".join(COLUMNS)] + [f"img{i:02d}.png," + ",".join(map(str, _vector(i))) for i in range(COUNT)]
    (root / "labels.csv").write_text("\n".join(rows) + "\n")
    return root


@pytest.fixture(scope="module")
def built(source):
    options = {"transform": "none", "labels": str(source / "labels.csv"), "workers": 0}
    out = {}
    for name, extra in (("d.zip", {}), ("d.gfd", {}), ("sh", {"format": "shards", "shard_size": "2KB"})):
        build.build(source / "src", source / name, build.BuildOptions(**options, **extra))
        out[name] = open_dataset(source / name)
    return out


def _by_image(ds) -> dict[str, list[float]]:
    """{SHA-256 of the pixels: label vector} over every image, in any format."""
    if ds.format == "shards":
        pairs = ds.first(ds.num_raw)
    else:
        pairs = ((ds[i][0].numpy(), ds[i][1].numpy()) for i in range(ds.num_raw))
    return {hashlib.sha256(np.ascontiguousarray(p).tobytes()).hexdigest(): label.tolist() for p, label in pairs}


def test_every_format_keeps_each_images_vector_and_the_column_names(built, source):
    expected = _by_image(built["d.zip"])
    assert sorted(expected.values()) == sorted(np.float32(_vector(i)).tolist() for i in range(COUNT))
    for ds in built.values():
        assert (ds.label_names, ds.label_dim) == (COLUMNS, 3)
        assert _by_image(ds) == expected, ds.format
    # zip and fast hash the same pixels and vectors alike; the zip's dataset.json holds NVlabs' lists of numbers
    assert built["d.zip"].content_hash == built["d.gfd"].content_hash
    with zipfile.ZipFile(source / "d.zip") as archive:
        meta = json.loads(archive.read("dataset.json"))
    assert meta["label_names"] == COLUMNS and len(meta["labels"][0][1]) == 3


def test_info_shows_ranges_and_verify_rehashes_the_vectors(built, source):
    for name in built:
        summary = check.info(source / name)
        assert summary["labels"]["kind"] == "vectors" and not summary["labels"]["multi_hot"]
        age = summary["labels"]["columns"]["age"]
        ages = np.float32([_vector(i)[2] for i in range(COUNT)]).astype(np.float64)
        assert age["min"] == ages.min() and age["max"] == ages.max() and age["mean"] == pytest.approx(ages.mean())
        assert summary["labels"]["columns"]["smiling"]["nonzero"] == COUNT // 2
        assert "age: -1.5 / " in check.info_text(summary)
        assert check.verify(source / name, workers=0)["hash_checked"]


def test_multi_hot_vectors_are_counted_per_label():
    labels = np.float32([[1, 0, 1], [0, 0, 1], [1, 0, 1]])
    summary = distribution.distribution(["a", "b", "c"], labels)
    assert summary["multi_hot"] and [c["nonzero"] for c in summary["columns"].values()] == [2, 0, 3]
    assert distribution.distribution_lines(summary)[1:] == ["  a: 2", "  b: 0", "  c: 3"]
    assert distribution.distribution(["x", "y"], np.array([1, 1, 0]))["counts"] == {"x": 1, "y": 2}


def test_the_shard_stream_gives_each_image_its_vector(built):
    ds = built["sh"]
    assert ds.vectors and ds.raw_labels.shape == (COUNT, 3)
    expected = _by_image(ds)
    images, labels = next(make_loader(ds, COUNT, seed=3, workers=0))
    for pixels, label in zip(((images + 1) * 127.5).round().to(torch.uint8), labels, strict=True):  # from [-1, 1]
        key = hashlib.sha256(np.ascontiguousarray(pixels.numpy()).tobytes()).hexdigest()
        assert label.tolist() == expected[key]
    # a uniform draw of label() gives the reals' vectors, as metrics draw them for a conditional generator
    assert sorted(ds.label(i).tolist() for i in range(COUNT)) == sorted(expected.values())


def test_source_dataset_json_vectors_keep_their_declared_names(tmp_path):
    files = {f"{i}.png": png(i, 8) for i in range(3)}
    meta = {"labels": [[f"{i}.png", [i, 0.5]] for i in range(3)], "label_names": ["pose", "light"]}
    files["dataset.json"] = json.dumps(meta).encode()
    src = write_folder(tmp_path / "src", files)
    build.build(src, tmp_path / "o.gfd", build.BuildOptions(transform="none", workers=0))
    ds = open_dataset(tmp_path / "o.gfd")
    assert ds.label_names == ["pose", "light"] and sorted(ds.raw_labels[:, 0].tolist()) == [0, 1, 2]
    meta["label_names"] = ["pose"]
    (src / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="label_names lists 1 names for label vectors of 2 numbers"):
        build.build(src, tmp_path / "p.gfd", build.BuildOptions(transform="none", workers=0))


def test_every_problem_of_a_vector_csv_is_listed_once(tmp_path):
    src = write_folder(tmp_path / "src", {f"{name}.png": png(i, 8) for i, name in enumerate("abcdefgh")})
    rows = [
        "file,x,y",
        "a.png,1,0",
        "b.png,1",  # a cell short
        "c.png,nan,1",
        "d.png,inf,1e39",
        "e.png,one,2",
        "ghost.png,1,1",  # no such image
        "a.png,0,0",  # a second row for a.png
        "f.png,0.5,-3",
        "g.png,1,1,1",  # a cell too many
    ]  # and h.png has no row
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    result = CliRunner().invoke(
        main, ["dataset", "build", str(src), str(tmp_path / "o.zip"), "--transform", "none", "--labels",
               str(tmp_path / "labels.csv")],
    )  # fmt: skip
    assert result.exit_code == 2 and "Traceback" not in result.output
    out = result.output
    for expected in (
        "b.png: expected file and 2 number(s) (the header's columns) at ",
        "c.png: x='nan' at ",
        "d.png: x='inf', y='1e39' at ",
        "e.png: x='one' at ",
        "labels.csv:7: ghost.png is not an image in SRC",
        "a.png: a second row at ",
        "g.png: expected file and 2 number(s) (the header's columns) at ",
        "h.png: no row in labels.csv",
        "8 problems; nothing written",
    ):
        assert out.count(expected) == 1, (expected, out)
    assert "f.png" not in out and not (tmp_path / "o.zip").exists()
    # --on-error skip keeps the rows that are right: f.png only (a.png is ambiguous)
    summary = build.build(
        src, tmp_path / "o.zip", build.BuildOptions(transform="none", labels=str(tmp_path / "labels.csv"),
                                                    on_error="skip", workers=0),
    )  # fmt: skip
    assert summary["written"] == 1
    assert open_dataset(tmp_path / "o.zip").raw_labels.tolist() == [[0.5, -3.0]]


@pytest.mark.parametrize(
    "header, message",
    [("file,x,x", "repeats a name"), ("file,x,", "a column name is empty")],
)
def test_a_bad_header_is_named(tmp_path, header, message):
    src = write_folder(tmp_path / "src", {"a.png": png(1, 8)})
    (tmp_path / "labels.csv").write_text(f"{header}\na.png,1,2\n")
    with pytest.raises(UserError, match=message):
        build.build(src, tmp_path / "o.zip", build.BuildOptions(transform="none", labels=str(tmp_path / "labels.csv")))


def test_hostile_vector_files_are_refused_when_opened(built, source, tmp_path):
    header_at = (source / "d.gfd").read_bytes()
    offset, length = np.frombuffer(header_at[8:24], dtype="<u8")
    text = json.loads(header_at[offset : offset + length])
    at = offset - 4 * COUNT * 3  # the first label vector
    cases = {
        "label_kind is not": lambda h, body: (dict(h, label_kind="matrix"), body),
        "not finite": lambda h, body: (h, body[:at] + np.float32([np.nan]).tobytes() + body[at + 4 :]),
    }
    for message, edit in cases.items():
        changed, body = edit(dict(text), header_at[:offset])
        encoded = json.dumps(changed).encode()
        body = body[:8] + np.array([len(body), len(encoded)], dtype="<u8").tobytes() + body[24:]
        (tmp_path / "x.gfd").write_bytes(body + encoded)
        with pytest.raises(UserError, match=message):
            open_dataset(tmp_path / "x.gfd")
    # shards: labels.f32 that is not the index's, and a sample whose .json vector is short
    copy = tmp_path / "sh"
    copy.mkdir()
    for path in (source / "sh").iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    (copy / shards.LABELS_FILE).write_bytes(np.zeros((COUNT, 3), dtype="<f4").tobytes())
    with pytest.raises(UserError, match=r"labels.f32: not the label vectors index.json describes"):
        open_dataset(copy)
    index = json.loads((copy / shards.INDEX).read_text())
    index["labels_sha256"] = hashlib.sha256((copy / shards.LABELS_FILE).read_bytes()).hexdigest()
    (copy / shards.INDEX).write_text(json.dumps(index))
    with pytest.raises(UserError, match="labels.f32 differs from the samples' .json labels"):
        check.verify(copy, workers=0)
