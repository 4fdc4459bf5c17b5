import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from data_testfiles import (
    bad_files,
    convertible_files,
    png,
    read_nvlabs_zip,
    write_fast,
    write_folder,
    write_nvlabs_zip,
)
from PIL import Image

from ganforge.cli import main
from ganforge.data import images, open_dataset, shards
from ganforge.data import options as data_options
from ganforge.data.build import BuildOptions, build
from ganforge.errors import UserError

BAD_REASONS = {
    "truncated.png": "truncated",
    "truncated.jpg": "truncated",
    "tiny.png": "too small: 1x1",
    "empty.png": "empty file",
    "text.png": "not an image",
    "dup.png": "exact duplicate of a-good/0.png",
}


def run_cli(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


@pytest.fixture
def messy(tmp_path):
    """a-good/ holds 3 clean images, b-bad/ one file per bad-input class, odd/ convertible modes."""
    files = {f"a-good/{i}.png": png(i) for i in range(3)}
    files.update({f"b-bad/{name}": data for name, data in bad_files().items()})
    files.update({f"c-odd/{name}": data for name, data in convertible_files().items()})
    return write_folder(tmp_path / "src", files)


def test_fail_mode_lists_every_bad_file_exits_2_writes_nothing(messy, tmp_path):
    dest = tmp_path / "out.zip"
    proc = subprocess.run(
        [sys.executable, "-m", "ganforge", "dataset", "build", messy, dest, "--resolution", "8", "--workers", "2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    for name, reason in BAD_REASONS.items():
        line = next(line for line in proc.stderr.splitlines() if f"b-bad/{name}:" in line)
        assert reason in line
    assert "c-odd/" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


@pytest.mark.parametrize("fmt", ["zip", "fast"])
def test_skip_mode_builds_the_good_files_and_reports_the_rest(messy, tmp_path, fmt):
    dest = tmp_path / ("out.zip" if fmt == "zip" else "out.gfd")
    result = run_cli("dataset", "build", messy, dest, "--resolution", "8", "--on-error", "skip", "--workers", "0")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / f"{dest.name}.report.json").read_text())
    assert {item["file"]: item["reason"] for item in report["skipped"]}.keys() == {f"b-bad/{n}" for n in BAD_REASONS}
    for item in report["skipped"]:
        assert BAD_REASONS[item["file"].removeprefix("b-bad/")] in item["reason"]
    ds = open_dataset(dest)
    assert (len(ds), ds.resolution, ds.channels, ds.format) == (3 + len(convertible_files()), 8, 3, fmt)


def test_folder_zip_fast_same_pixels_labels_and_hash(messy, tmp_path):
    good = write_folder(tmp_path / "good", {f"{k}/{i}.png": png(10 * i + ord(k), 8) for k in "ab" for i in range(3)})
    assert (
        run_cli("dataset", "build", good, tmp_path / "x.zip", "--transform", "none", "--labels", "folders").exit_code
        == 0
    )
    assert run_cli("dataset", "build", tmp_path / "x.zip", tmp_path / "x.gfd", "--transform", "none").exit_code == 0
    folder, archive, fast = (open_dataset(p) for p in (good, tmp_path / "x.zip", tmp_path / "x.gfd"))
    assert archive.label_names == fast.label_names == ["a", "b"]
    for i in range(6):
        assert torch.equal(archive[i][0], fast[i][0]) and torch.equal(archive[i][1], fast[i][1])
        assert torch.equal(folder[i][0], archive[i][0])
    assert archive.content_hash == fast.content_hash
    assert [int(l.argmax()) for _, l in (archive[i] for i in range(6))] == [0, 0, 0, 1, 1, 1]


def test_our_zip_reads_with_nvlabs_layout(messy, tmp_path):
    build(messy, tmp_path / "x.zip", BuildOptions(resolution=8, labels="folders", on_error="skip", workers=0))
    pixels, labels = read_nvlabs_zip(tmp_path / "x.zip")
    ds = open_dataset(tmp_path / "x.zip")
    with zipfile.ZipFile(tmp_path / "x.zip") as archive:
        assert archive.namelist()[0] == "00000/img00000000.png"
        assert all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
    assert pixels.shape == (len(ds), 3, 8, 8)
    for i in range(len(ds)):
        assert np.array_equal(pixels[i], ds[i][0].numpy())
        assert labels[i] == int(ds[i][1].argmax())


def test_labels_from_csv_with_missing_and_unknown_rows(tmp_path):
    src = write_folder(tmp_path / "src", {"x.png": png(1, 8), "y.png": png(2, 8), "z.png": png(3, 8)})
    (tmp_path / "labels.csv").write_text("file,label\nx.png,10\ny.png,9\nghost.png,1\n")
    result = run_cli(
        "dataset", "build", src, tmp_path / "o.zip", "--transform", "none", "--labels", tmp_path / "labels.csv"
    )
    assert result.exit_code == 2
    assert "labels.csv:4: ghost.png is not an image in SRC" in result.output  # the line in the file, header counted
    assert "z.png: no row in labels.csv" in result.output
    (tmp_path / "labels.csv").write_text("x.png,10\ny.png,9\nz.png,9\n")
    result = run_cli(
        "dataset", "build", src, tmp_path / "o.zip", "--transform", "none", "--labels", tmp_path / "labels.csv"
    )
    assert result.exit_code == 0, result.output
    ds = open_dataset(tmp_path / "o.zip")
    assert ds.label_names == ["9", "10"]  # numeric names sort numerically
    assert [int(ds[i][1].argmax()) for i in range(3)] == [1, 0, 0]


def test_files_outside_class_folders_are_reported(tmp_path):
    src = write_folder(tmp_path / "src", {"a/x.png": png(1, 8), "loose.png": png(2, 8)})
    result = run_cli("dataset", "build", src, tmp_path / "o.zip", "--transform", "none", "--labels", "folders")
    assert result.exit_code == 2 and "loose.png: not inside a class sub-folder" in result.output


def test_argument_problems_are_listed_together(tmp_path):
    (tmp_path / "o.zip").write_bytes(b"")
    result = run_cli("dataset", "build", tmp_path / "nope", tmp_path / "o.zip", "--resolution", "12")
    assert result.exit_code == 2
    for text in ("is not a folder or a zip", "already exists", "not a power of two"):
        assert text in result.output
    assert "--resolution: required" in run_cli("dataset", "build", tmp_path, tmp_path / "n.zip").output


def test_options_made_in_python_meet_the_checks_of_the_command_line(tmp_path):
    """The declared choices are the ones the decoder and the shard writer carry out, and a BuildOptions made in Python
    is checked against the declarations as the command line's are."""
    assert (data_options.TRANSFORMS, data_options.ENCODINGS) == (images.TRANSFORMS, shards.ENCODINGS)
    assert tuple(images.RESIZE_FILTERS) == data_options.RESIZE_FILTERS
    options = BuildOptions(resolution=8, transform="stretch", channels=2, workers=-1, max_images=0)
    with pytest.raises(UserError) as err:
        build(tmp_path, tmp_path / "o.zip", options)
    assert err.value.problems == [
        "--transform stretch: unknown; use one of center-crop, center-crop-wide, pad, none",
        "--channels 2: unknown; use one of 1, 3",
        "--max-images 0: must be from 1 to 1,000,000,000",
        "--workers -1: must be from 0 to 256",
    ]
    assert not (tmp_path / "o.zip").exists()


@pytest.mark.parametrize("resolution", [4, 2048])
def test_build_refuses_a_resolution_train_cannot_use(tmp_path, resolution):
    """One limit for both commands: what `dataset build` writes, `train` (and its --dry-run) accepts."""
    result = run_cli("dataset", "build", tmp_path, tmp_path / "o.zip", "--resolution", str(resolution))
    assert result.exit_code == 2 and f"--resolution: {resolution} is not a power of two from 8 to 1024" in result.output
    assert not (tmp_path / "o.zip").exists()


SMALL = "size 4x4: a side is not a power of two from 8 to 1024"


def test_build_without_resolution_refuses_images_train_cannot_use(tmp_path):
    (tmp_path / "src").mkdir()
    for i in range(3):
        Image.new("RGB", (4, 4), (i, 0, 0)).save(tmp_path / "src" / f"{i}.png")
    result = run_cli("dataset", "build", tmp_path / "src", tmp_path / "o.zip", "--transform", "none", "--workers", "0")
    assert result.exit_code == 2, result.output
    assert all(f"{tmp_path / 'src' / f'{i}.png'}: {SMALL}" in result.output for i in range(3)), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


@pytest.mark.parametrize("command", ["info", "verify"])
def test_an_archive_of_images_train_cannot_use_is_refused_when_read(tmp_path, command):
    """Images read as they are meet the limit of limits.py, as at every other door: an NVlabs-layout zip of 4x4
    images from elsewhere is refused naming its first image."""
    with zipfile.ZipFile(tmp_path / "small.zip", "w") as archive:
        for i in range(2):
            archive.writestr(f"00000/img{i:08d}.png", png(i, 4))
    result = run_cli("dataset", command, tmp_path / "small.zip")
    assert result.exit_code == 2 and f"{tmp_path / 'small.zip'}/00000/img00000000.png: {SMALL}" in result.output


def test_decompression_bombs_are_bad_files(tmp_path, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # 12x12 is past the warning limit, 16x16 past the error one
    src = write_folder(tmp_path / "src", {"warn.png": png(1, 12), "error.png": png(2, 16)})
    with pytest.raises(UserError, match="decompression bomb") as info:
        build(src, tmp_path / "o.zip", BuildOptions(resolution=8, workers=0))
    assert sum("decompression bomb" in problem for problem in info.value.problems) == 2


def test_parallel_and_serial_builds_write_identical_bytes(messy, tmp_path):
    for workers in (0, 2):
        options = BuildOptions(resolution=8, on_error="skip", workers=workers, max_images=9)
        build(messy, tmp_path / f"w{workers}.zip", options)
    assert (tmp_path / "w0.zip").read_bytes() == (tmp_path / "w2.zip").read_bytes()
    assert len(open_dataset(tmp_path / "w0.zip")) == 3  # the first 9 files: 3 good, 6 bad


def test_info_and_verify(messy, tmp_path):
    build(messy, tmp_path / "x.gfd", BuildOptions(resolution=8, labels="folders", on_error="skip", workers=0))
    summary = json.loads(run_cli("dataset", "info", tmp_path / "x.gfd", "--json").output)
    assert summary["labels"]["counts"] == {"a-good": 3, "c-odd": len(convertible_files())}
    assert (summary["count"], summary["format"], summary["content_hash_kind"]) == (8, "fast", "pixels")
    assert "content hash verified" in run_cli("dataset", "verify", tmp_path / "x.gfd").output
    data = bytearray((tmp_path / "x.gfd").read_bytes())
    data[4096 + 5] ^= 0xFF  # one pixel of the first image
    (tmp_path / "x.gfd").write_bytes(bytes(data))
    result = run_cli("dataset", "verify", tmp_path / "x.gfd")
    assert result.exit_code == 2 and "content hash mismatch" in result.output


def test_info_flags_what_train_would_refuse_and_says_it_did_not_verify(tmp_path):
    """A fast-format file whose header states 4x4 images (as `dataset build` wrote them before the limit): its header
    reads, and info names the problem without decoding."""
    arrays = [np.random.default_rng(i).integers(0, 256, (4, 4, 3), dtype=np.uint8) for i in range(2)]
    small = write_fast(tmp_path / "small.gfd", arrays, None, [])
    summary = json.loads(run_cli("dataset", "info", small, "--json").output)
    assert summary["verified"] is False and len(summary["problems"]) == 1
    assert summary["problems"][0].startswith("size 4x4 is not one `ganforge train` takes")
    text = run_cli("dataset", "info", small).output
    assert "problem: size 4x4" in text and f"`ganforge dataset verify {small}`" in text


def test_verify_names_a_damaged_zip_member(tmp_path):
    src = write_folder(tmp_path / "src", {"a.png": png(1, 8), "b.png": png(2, 8)})
    build(src, tmp_path / "x.zip", BuildOptions(transform="none", workers=0))
    data = (tmp_path / "x.zip").read_bytes()
    second = data.index(b"00000/img00000001.png") + 21 + 60  # inside the second member's PNG data
    (tmp_path / "x.zip").write_bytes(data[:second] + bytes([data[second] ^ 0xFF]) + data[second + 1 :])
    result = run_cli("dataset", "verify", tmp_path / "x.zip", "--workers", "0")
    assert result.exit_code == 2
    assert "img00000001.png: unreadable: BadZipFile" in result.output


def test_info_and_verify_on_foreign_archives_use_file_hashes(tmp_path):
    arrays = [np.random.default_rng(i).integers(0, 256, (8, 8, 3), dtype=np.uint8) for i in range(3)]
    foreign = write_nvlabs_zip(tmp_path / "nv.zip", arrays, [0, 1, 1])
    result = run_cli("dataset", "verify", foreign, "--workers", "0")
    assert result.exit_code == 0 and "no recorded content hash to check" in result.output
    summary = json.loads(run_cli("dataset", "info", foreign, "--json").output)
    assert (summary["content_hash_kind"], summary["labels"]["counts"]) == ("files", {"0": 1, "1": 2})


def test_grey_build_reads_back_with_one_channel(messy, tmp_path):
    build(messy, tmp_path / "g.zip", BuildOptions(resolution=8, channels=1, on_error="skip", workers=0))
    pixels, labels = read_nvlabs_zip(tmp_path / "g.zip")
    ds = open_dataset(tmp_path / "g.zip")
    assert ds.channels == 1 and pixels.shape == (len(ds), 1, 8, 8) and labels is None
    assert np.array_equal(pixels[0], ds[0][0].numpy())


def test_max_images_ignores_labels_of_files_it_leaves_out(tmp_path):
    src = write_folder(tmp_path / "src", {"a/x.png": png(1, 8), "a/y.png": png(2, 8), "z.png": png(3, 8)})
    options = BuildOptions(transform="none", labels="folders", max_images=2, workers=0)
    assert build(src, tmp_path / "o.gfd", options)["written"] == 2
    with pytest.raises(UserError, match="z.png: not inside a class sub-folder"):
        build(src, tmp_path / "p.gfd", BuildOptions(transform="none", labels="folders", workers=0))
