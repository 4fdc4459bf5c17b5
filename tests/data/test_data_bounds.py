"""The readers' guards against hostile datasets, each tested where it stands: byte caps on zip members and files,
image headers checked before decoding, dataset.json and CSV labels validated, one fast-format header check, and
`dataset build` leaving nothing behind when a write fails."""

import json
import os
import resource
import signal
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from data_testfiles import png, write_fast, write_folder

from ganforge.data import fastformat, images, labels, open_dataset, pool
from ganforge.data.build import BuildOptions, build
from ganforge.data.files import ZipMembers
from ganforge.errors import UserError


def member(index: int) -> str:
    return f"00000/img{index:08d}.png"


def write_zip(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def labelled_zip(path: Path, meta, count: int = 3) -> Path:
    text = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    return write_zip(path, {**{member(i): png(i, 8) for i in range(count)}, "dataset.json": text}, zipfile.ZIP_DEFLATED)


def entries(values) -> list:
    return [[member(i), value] for i, value in enumerate(values)]


def png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")


# ---- zip members -------------------------------------------------------------------------------------------------


def test_a_member_declaring_more_than_an_image_may_take_is_refused_from_the_directory(tmp_path):
    path = write_zip(tmp_path / "x.zip", {member(0): png(0, 8), member(1): png(1, 8)}, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    second = raw.index(b"PK\x01\x02", raw.index(b"PK\x01\x02") + 4)
    raw[second + 24 : second + 28] = struct.pack("<I", 3 * 2**30 // 2)  # 1.5 GiB uncompressed, data unchanged
    path.write_bytes(bytes(raw))
    with pytest.raises(UserError, match=r"img00000001\.png: 1610612736 bytes once inflated, more than the 16777728"):
        open_dataset(path)


def test_a_member_that_inflates_past_the_cap_is_not_read(tmp_path):
    path = write_zip(tmp_path / "x.zip", {"a.png": bytes(2**20)}, zipfile.ZIP_DEFLATED)
    members = ZipMembers(path)
    with pytest.raises(images.BadImage, match="1048576 bytes once inflated, more than the 4096"):
        members.read("a.png", 4096)
    assert len(members.read("a.png", 2**20)) == 2**20


def test_members_sharing_their_data_are_refused(tmp_path):
    path = write_zip(tmp_path / "x.zip", {member(0): png(0, 8)})
    raw = path.read_bytes()
    central, end = raw.index(b"PK\x01\x02"), raw.index(b"PK\x05\x06")
    entry = raw[central:end]
    directory = entry + entry.replace(member(0).encode(), member(1).encode())
    tail = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 2, 2, len(directory), central, 0)
    path.write_bytes(raw[:central] + directory + tail)
    with pytest.raises(UserError, match="zip members overlap"):
        open_dataset(path)


def test_only_stored_and_deflated_unencrypted_members_are_read(tmp_path):
    bzip2 = write_zip(tmp_path / "b.zip", {member(0): png(0, 8)}, zipfile.ZIP_BZIP2)
    with pytest.raises(UserError, match="compressed with zip method 12"):
        open_dataset(bzip2)
    encrypted = write_zip(tmp_path / "e.zip", {member(0): png(0, 8)})
    raw = bytearray(encrypted.read_bytes())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        raw[raw.index(signature) + flags_at] |= 1
    encrypted.write_bytes(bytes(raw))
    with pytest.raises(UserError, match="encrypted"):
        open_dataset(encrypted)


# ---- image files -------------------------------------------------------------------------------------------------


def test_an_image_header_larger_than_the_dataset_is_refused_before_decoding(tmp_path):
    # 4000x4000 is within PIL's own decompression-bomb limit: without this check, PIL would decode it.
    ds = open_dataset(write_folder(tmp_path / "a", {"a.png": png(1, 8), "b.png": png_header(4000, 4000)}))
    with pytest.raises(UserError, match=r"b\.png: size 4000x4000, larger than the 8x8 .*refused before decoding"):
        ds[1]
    with pytest.raises(UserError, match=r"size 2048x2048, larger than the 1024x1024 .*refused before decoding"):
        open_dataset(write_folder(tmp_path / "b", {"a.png": png_header(2048, 2048)}))


def test_a_file_larger_than_an_image_of_the_dataset_is_not_read(tmp_path):
    folder = write_folder(tmp_path, {"a.png": png(1, 8), "b.png": png(2, 8)})
    ds = open_dataset(folder)
    with open(folder / "b.png", "ab") as file:
        file.truncate(images.max_file_bytes(8) + 1)
    with pytest.raises(UserError, match=r"b\.png: 16777729 bytes, more than the 16777728"):
        ds[1]


def test_folders_read_regular_files_only(tmp_path):
    (tmp_path / "dir.png").mkdir()
    os.mkfifo(tmp_path / "fifo.png")
    ds = open_dataset(write_folder(tmp_path, {"a.png": png(1, 8)}))
    assert ds.source.names == ["a.png"]
    with pytest.raises(images.BadImage, match="not a regular file"):
        ds.source.read_named("fifo.png", 100)


# ---- labels ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        pytest.param({"labels": entries([10**8, 0, 1])}, "class index 100000000 is outside 0..2", id="class-1e8"),
        pytest.param({"labels": entries([5, 0, 1])}, "class index 5 is outside 0..2", id="class-5-of-3-images"),
        pytest.param({"labels": entries([-1, 0, 1])}, "class index -1 is outside 0..2", id="class-minus-1"),
        pytest.param(
            {"labels": entries([0, 1, 2]), "label_names": ["a"]},
            r"class index 1 is outside 0..0 \(its label_names",
            id="too-few-label-names",
        ),
        pytest.param(
            {"labels": entries([0, 1, 2]), "label_names": ["a", "a", "b"]},
            "label_names repeats a name",
            id="repeated-label-names",
        ),
        pytest.param(
            {"labels": entries([0, 1, 2]), "label_names": "abc"},
            "label_names is not a list of strings",
            id="label-names-a-string",
        ),
        pytest.param({"labels": entries(["x", 0, 1])}, "neither a class index", id="string-label"),
        pytest.param({"labels": entries([True, 0, 1])}, "neither a class index", id="bool-label"),
        pytest.param(
            {"labels": entries([[0.0], [0.0, 1.0], [1.0]])}, "label vectors differ in length", id="ragged-vectors"
        ),
        pytest.param({"labels": entries([[1e39], [0.0], [1.0]])}, "not finite in float32", id="vector-past-float32"),
        pytest.param({"labels": entries([[10**400], [0.0], [1.0]])}, "not finite in float32", id="vector-past-float64"),
        pytest.param(
            {"labels": entries([["a"], [0.0], [1.0]])}, "holds something other than numbers", id="vector-of-strings"
        ),
        pytest.param({"labels": {"a": 1}}, '"labels" is not a list', id="labels-a-dict"),
        pytest.param({"labels": [1, 2, 3]}, "labels entry 0 is not a", id="labels-not-pairs"),
        pytest.param({"labels": entries([0, 1])}, r"no label for 00000/img00000002\.png", id="missing-label"),
        pytest.param([1, 2], "not a JSON object", id="a-list"),
        pytest.param({"labels": None, "ganforge": 3}, '"ganforge" entry is not an object', id="ganforge-not-an-object"),
        pytest.param(
            {"labels": None, "ganforge": {"content_hash": "../x"}},
            "content_hash is not 64 hex digits",
            id="content-hash-a-path",
        ),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested too deeply", id="nested-100000-deep"),
        pytest.param(b'{"labels": [', "not valid JSON", id="cut-short"),
        pytest.param(b"\xff\xfe\x00", "not valid JSON", id="not-utf"),
    ],
)
def test_malformed_dataset_json_is_one_user_error_naming_it(tmp_path, meta, message):
    path = labelled_zip(tmp_path / "x.zip", meta)
    with pytest.raises(UserError, match=message) as error:
        open_dataset(path)
    assert error.value.problems[0].startswith(f"--data: {path}/dataset.json: "), error.value.problems


def test_class_labels_and_vectors_within_their_bounds_read(tmp_path):
    ds = open_dataset(labelled_zip(tmp_path / "a.zip", {"labels": entries([0, 2, 2])}))
    assert ds.label_names == ["0", "1", "2"] and ds[1][1].tolist() == [0.0, 0.0, 1.0]
    named = {"labels": entries([5, 0, 1]), "label_names": [str(i) for i in range(6)]}
    assert open_dataset(labelled_zip(tmp_path / "b.zip", named)).label_dim == 6  # declared classes may exceed N
    vectors = open_dataset(labelled_zip(tmp_path / "c.zip", {"labels": entries([[0.5, 1], [0, 0], [1, 2]])}))
    assert vectors.label_dim == 2 and vectors[2][1].tolist() == [1.0, 2.0]


def test_dataset_json_past_its_cap_is_refused_before_parsing(tmp_path, monkeypatch):
    cap = labels.metadata_cap(3)
    path = labelled_zip(tmp_path / "x.zip", b" " * cap + b"{}")
    monkeypatch.setattr(labels, "parse_json", lambda *args: pytest.fail("parsed a file past its cap"))
    with pytest.raises(UserError, match=f"dataset.json: {cap + 2} bytes once inflated, more than the {cap}"):
        open_dataset(path)


def test_a_negative_label_is_refused_by_dataset_build_naming_its_file(tmp_path):
    src = write_folder(tmp_path / "src", {"x.png": png(1, 8), "y.png": png(2, 8)})
    (tmp_path / "l.csv").write_text("x.png,-1\ny.png,0\n")
    options = BuildOptions(transform="none", workers=0, labels=str(tmp_path / "l.csv"))
    with pytest.raises(UserError, match=r"x\.png: label -1 at .*l\.csv:1 is negative") as error:
        build(src, tmp_path / "o.zip", options)
    assert len(error.value.problems) == 1
    source = labelled_zip(tmp_path / "s.zip", {"labels": entries([-1, 0, 1])})
    with pytest.raises(UserError, match=r"s\.zip/dataset\.json: class index -1 is outside"):
        build(source, tmp_path / "p.zip", BuildOptions(transform="none", workers=0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.csv", "s.zip", "src"]


def test_label_csv_that_is_not_utf8_text_is_one_error(tmp_path):
    src = write_folder(tmp_path / "src", {"x.png": png(1, 8)})
    (tmp_path / "l.csv").write_bytes(b"x.png,\xe9t\xe9\n")
    with pytest.raises(UserError, match=r"l\.csv: not UTF-8 text"):
        build(src, tmp_path / "o.zip", BuildOptions(transform="none", workers=0, labels=str(tmp_path / "l.csv")))


# ---- the fast format ---------------------------------------------------------------------------------------------


def fast_with_header(path: Path, edit) -> Path:
    write_fast(path, [np.full((8, 8, 3), i, np.uint8) for i in range(2)], [0, 1], ["a", "b"])
    raw = path.read_bytes()
    _, offset, length = struct.unpack("<8sQQ", raw[:24])
    header = json.dumps(edit(json.loads(raw[offset : offset + length]))).encode()
    path.write_bytes(struct.pack("<8sQQ", fastformat.MAGIC, offset, len(header)) + raw[24:offset] + header)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: [h], "not a JSON object"),
        (lambda h: h | {"count": "x"}, "count is not a whole number"),
        (lambda h: h | {"count": 4, "channels": 1.5}, "channels is not 1 or 3"),  # 4 * 1.5 * 64 matches the data
        (lambda h: h | {"channels": True}, "channels is not 1 or 3"),
        (lambda h: h | {"resolution": 2048}, "resolution is not a whole number from 1 to 1024"),
        (lambda h: h | {"label_names": [1, 2]}, "label_names is not a list of strings"),
        (lambda h: h | {"content_hash": None}, "content_hash is not 64 hex digits"),
        (lambda h: h | {"format_version": 2}, "not format ganforge-fast version 1"),
        (lambda h: h | {"count": 3}, "header says 3 images but the data section ends"),
    ],
)
def test_one_header_check_for_every_reader_of_the_fast_format(tmp_path, edit, message):
    path = fast_with_header(tmp_path / "x.gfd", edit)
    with pytest.raises(ValueError, match=message):
        fastformat.read_header(path)
    with pytest.raises(UserError, match=f"damaged fast dataset \\(.*{message}"):
        open_dataset(path)


def test_fast_prefix_and_class_indices_are_checked_before_use(tmp_path):
    good = write_fast(tmp_path / "g.gfd", [np.zeros((8, 8, 3), np.uint8)] * 2, [0, 1], ["a", "b"]).read_bytes()
    cases = {
        "short": (good[:12], "shorter than the 24-byte prefix"),
        "huge": (good[:16] + struct.pack("<Q", 2**62) + good[24:], "places the header at bytes"),
        "trailing": (good + b" ", "places the header at bytes"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / f"{name}.gfd").write_bytes(data)
        with pytest.raises(UserError, match=message):
            open_dataset(tmp_path / f"{name}.gfd")
    write_fast(tmp_path / "c.gfd", [np.zeros((8, 8, 3), np.uint8)] * 2, [0, 7], ["a", "b"])
    with pytest.raises(UserError, match=r"class index 7 outside 0\.\.1"):
        open_dataset(tmp_path / "c.gfd")


# ---- dataset build: no partial output ----------------------------------------------------------------------------


def _limit_file_size(limit: int):
    def apply() -> None:
        # A disk that fills up: writes past `limit` bytes fail with EFBIG (SIGXFSZ ignored so that they fail
        # rather than kill), the same OSError path as ENOSPC on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_during_build_is_one_error_and_leaves_nothing(tmp_path):
    src = write_folder(tmp_path / "src", {f"{i:02d}.png": png(i, 16) for i in range(40)})
    dest = tmp_path / "out.zip"
    command = [sys.executable, "-m", "ganforge", "dataset", "build", src, dest, "--transform", "none", "--workers", "0"]
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=_limit_file_size(20_000))
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(errors) == 1 and f"DEST: cannot write {dest}.partial (File too large)" in errors[0], done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_a_write_error_in_the_fast_format_and_the_report_leaves_nothing(tmp_path, monkeypatch):
    src = write_folder(tmp_path / "src", {f"{i}.png": png(i, 8) for i in range(3)})

    def no_space(*args):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(fastformat.FastWriter, "finish", no_space)
        with pytest.raises(UserError, match=r"DEST: cannot write .*o\.gfd\.partial \(No space left on device\)"):
            build(src, tmp_path / "o.gfd", BuildOptions(transform="none", workers=0))
    with monkeypatch.context() as patch:
        patch.setattr(Path, "write_text", no_space)
        with pytest.raises(UserError, match=r"cannot write .*p\.gfd\.report\.json\.partial \(No space left"):
            build(src, tmp_path / "p.gfd", BuildOptions(transform="none", workers=0, on_error="skip"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_a_stale_partial_is_replaced_not_written_through(tmp_path):
    src = write_folder(tmp_path / "src", {"a.png": png(1, 8)})
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (tmp_path / "o.zip.partial").symlink_to(victim)
    build(src, tmp_path / "o.zip", BuildOptions(transform="none", workers=0))
    assert victim.read_bytes() == b"keep" and len(open_dataset(tmp_path / "o.zip")) == 1
    assert not (tmp_path / "o.zip.partial").exists()


def test_files_queued_for_the_pool_are_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(pool, "_IN_FLIGHT_BYTES", 10)
    pulled = []

    def items():
        for index in range(6):
            pulled.append(index)
            yield (b"x" * 8, index)

    first = next(pool.ordered_map(_second, items(), workers=1))
    assert first == 0 and len(pulled) == 2  # 16 bytes queued > 10: the oldest is waited for before reading more


def _second(item):
    return item[1]
