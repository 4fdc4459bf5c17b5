"""Non-square datasets (W x H, both powers of two): built by center-crop, pad or as they are, in every format, both
orientations; read with their shape; square datasets hash and store exactly as before."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from data_testfiles import write_folder
from PIL import Image

from ganforge.cli import main
from ganforge.data import build, check, images
from ganforge.data.archive import open_dataset
from ganforge.data.loader import make_loader
from ganforge.errors import UserError

FORMATS = {"d.zip": {}, "d.gfd": {}, "sh": {"format": "shards", "shard_size": "4KB"}}


def _png(seed: int, height: int, width: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return images.encode_png(pixels.transpose(2, 0, 1))


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Six 50x30 photos (wide) and six 30x50 (tall)."""
    root = tmp_path_factory.mktemp("nonsquare")
    write_folder(root / "wide", {f"{i}.png": _png(i, 30, 50) for i in range(6)})
    write_folder(root / "tall", {f"{i}.png": _png(i, 50, 30) for i in range(6)})
    return root


@pytest.mark.parametrize("orientation, size", [("wide", (16, 8)), ("tall", (8, 16))])
def test_every_format_keeps_the_width_and_height(photos, tmp_path, orientation, size):
    width, height = size
    datasets = {}
    for name, extra in FORMATS.items():
        options = build.BuildOptions(resolution=size, workers=0, **extra)
        build.build(photos / orientation, tmp_path / name, options)
        datasets[name] = ds = open_dataset(tmp_path / name)
        assert (ds.width, ds.height, ds.resolution) == (width, height, 8)
        assert ds.aspect == ((1, 2) if orientation == "wide" else (2, 1))
        images_batch, _ = next(make_loader(ds, 4, workers=0))
        assert tuple(images_batch.shape) == (4, 3, height, width)
        summary = check.info(tmp_path / name)
        assert (summary["width"], summary["height"], summary["problems"]) == (width, height, [])
        assert check.verify(tmp_path / name, workers=0)["hash_checked"]
    zipped, fast = datasets["d.zip"], datasets["d.gfd"]
    assert zipped.content_hash == fast.content_hash
    assert all(np.array_equal(zipped[i][0], fast[i][0]) for i in range(6))
    # the images are the centred boxes of the target's aspect, as images.fit makes them
    source = np.asarray(Image.open(photos / orientation / "0.png"))
    expected = images.fit(source, images.Conversion(size=size, transform="center-crop"))
    assert np.array_equal(fast[0][0].numpy(), expected.transpose(2, 0, 1))


def test_images_already_non_square_are_taken_as_they_are(tmp_path):
    src = write_folder(tmp_path / "src", {f"{i}.png": _png(i, 8, 32) for i in range(3)})
    build.build(src, tmp_path / "d.gfd", build.BuildOptions(transform="none", workers=0))
    ds = open_dataset(tmp_path / "d.gfd")
    assert (ds.width, ds.height, ds.aspect) == (32, 8, (1, 4))
    assert (open_dataset(src).width, open_dataset(src).height) == (32, 8)  # the folder itself reads alike


def test_a_square_dataset_hashes_and_stores_as_before(tmp_path):
    """The content hashes ganforge computed before non-square images existed (the same six 8x8 images in two class
    folders, taken as they are), and no width or height field in a square fast file's header."""
    for i in range(6):
        folder = tmp_path / "src" / ("a" if i % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    before = {
        "d.zip": "853465b9fb937dc039a2b981326c24de51197abbd4b6570dedc3de1b3798554a",
        "d.gfd": "853465b9fb937dc039a2b981326c24de51197abbd4b6570dedc3de1b3798554a",
        "sh": "1135e14a0599ea8459684cf752b9226db247998964cf16143571ce2ddd138e85",
    }
    for name, extra in FORMATS.items():
        options = build.BuildOptions(labels="folders", transform="none", workers=0, **extra)
        assert build.build(tmp_path / "src", tmp_path / name, options)["content_hash"] == before[name], name
    data = (tmp_path / "d.gfd").read_bytes()
    offset, length = np.frombuffer(data[8:24], dtype="<u8")
    header = json.loads(data[offset : offset + length])
    assert header["resolution"] == 8 and "width" not in header and "height" not in header
    index = json.loads((tmp_path / "sh" / "index.json").read_text())
    assert "width" not in index and "height" not in index


def test_the_size_option_and_its_refusals(photos, tmp_path):
    def run(*args):
        return CliRunner().invoke(main, ["dataset", "build", str(photos / "wide"), *map(str, args)])

    result = run(tmp_path / "ok.zip", "--resolution", "16x8", "--workers", "0")
    assert result.exit_code == 0, result.output
    assert open_dataset(tmp_path / "ok.zip").width == 16
    for value, message in (
        ("12x8", "--resolution: 12x8 is not a power of two from 8 to 1024, nor WxH of two such sides"),
        ("16x4", "--resolution: 16x4 is not a power of two"),
        ("16x8x2", "'16x8x2' is not a side R or a size WxH such as 512x256"),
        ("wide", "'wide' is not a side R or a size WxH"),
    ):
        result = run(tmp_path / "bad.zip", "--resolution", value)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, value
    result = run(tmp_path / "bad.zip", "--resolution", "16x8", "--transform", "center-crop-wide")
    assert result.exit_code == 2 and "center-crop-wide: pads to square" in result.output
    assert not (tmp_path / "bad.zip").exists()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"width": 16}, "width and height are not two different sides"),
        ({"width": 16, "height": 16}, "width and height are not two different sides"),
        ({"width": 16, "height": 4}, "width and height are not two different sides"),
        ({"width": 10**9, "height": 8}, "width and height are not two different sides"),
        ({"width": "16", "height": 8}, "width and height are not two different sides"),
        ({"width": 32, "height": 16}, "width and height are not two different sides"),
    ],
)
def test_a_hostile_size_in_a_header_or_index_is_refused(photos, tmp_path, fields, message):
    build.build(photos / "wide", tmp_path / "d.gfd", build.BuildOptions(resolution=(16, 8), workers=0))
    data = (tmp_path / "d.gfd").read_bytes()
    offset, length = np.frombuffer(data[8:24], dtype="<u8")
    header = json.loads(data[offset : offset + length])
    header.pop("width"), header.pop("height")
    encoded = json.dumps(header | fields).encode()
    prefix = data[:8] + np.array([offset, len(encoded)], dtype="<u8").tobytes() + data[24:offset]
    (tmp_path / "x.gfd").write_bytes(prefix + encoded)
    with pytest.raises(UserError, match=message):
        open_dataset(tmp_path / "x.gfd")
    build.build(photos / "wide", tmp_path / "sh", build.BuildOptions(resolution=(16, 8), workers=0, format="shards"))
    index = json.loads((tmp_path / "sh" / "index.json").read_text())
    index.pop("width"), index.pop("height")
    (tmp_path / "sh" / "index.json").write_text(json.dumps(index | fields))
    with pytest.raises(UserError, match=message):
        open_dataset(tmp_path / "sh")
