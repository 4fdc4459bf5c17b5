"""Hostile datasets against every command that reads them: NVlabs-layout zips, image folders, the fast format,
dataset.json labels and label CSVs, through `dataset build/info/verify`, `metrics` and `train --dry-run`.

Each file is made here by a small generator (a few KB at most): zip members declaring or inflating to far more than
an image may take, PNG headers declaring gigapixels, JSON nested 100,000 deep, labels of every wrong kind, fast-format
headers of every wrong type. Every case must end in one `error:` line naming the file, exit 2, within the time and
the 3 GB address space of the harness, and leave no output behind.
"""

import io
import json
import os
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hostile_harness import Case, assert_all_rejected
from PIL import Image

from ganforge.data import fastformat, images

SIDE = 8
GIB = 2**30


def png(seed: int, side: int = SIDE) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def member(index: int) -> str:
    return f"00000/img{index:08d}.png"


def pngs(count: int = 3) -> dict[str, bytes]:
    return {member(i): png(i) for i in range(count)}


def write_zip(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def meta_zip(path: Path, meta) -> Path:
    """Three 8x8 images and a dataset.json holding `meta` (bytes as they are, anything else as JSON), deflated."""
    text = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    return write_zip(path, {**pngs(), "dataset.json": text}, zipfile.ZIP_DEFLATED)


def labelled(values, **extra) -> dict:
    return {"labels": [[member(i), value] for i, value in enumerate(values)], **extra}


def declared_size_zip(path: Path, declared: int) -> Path:
    """A zip whose second image declares `declared` bytes once inflated in the zip directory, while its real data is
    a small PNG: the reader must refuse it from the directory, before inflating anything."""
    write_zip(path, {member(0): png(0), member(1): png(1)}, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02", raw.index(b"PK\x01\x02") + 4)  # the second member's directory entry
    raw[entry + 24 : entry + 28] = struct.pack("<I", declared)  # its uncompressed size
    path.write_bytes(bytes(raw))
    return path


def inflating_zip(path: Path, inflated: int) -> Path:
    """A member that really inflates to `inflated` bytes of zeros (a few KB compressed) after a good first image."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(member(0), png(0))
        archive.writestr(member(1), png(1)[:33] + bytes(inflated))
    return path


def png_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height (8-bit grey) and whose data is a few bytes: a pixel bomb's header."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")


def overlapping_zip(path: Path) -> Path:
    """Two directory entries for one member's data: how zip bombs reuse one compressed kernel for many files."""
    write_zip(path, {member(0): png(0)})
    raw = path.read_bytes()
    central = raw.index(b"PK\x01\x02")
    end = raw.index(b"PK\x05\x06")
    entry = raw[central:end]
    second = entry.replace(member(0).encode(), member(1).encode())
    records = struct.unpack("<4s4H2LH", raw[end : end + 22])
    directory = entry + second
    tail = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 2, 2, len(directory), central, records[-1])
    path.write_bytes(raw[:central] + directory + tail)
    return path


def flagged_zip(path: Path, flag_bits: int = 0, method: int | None = None) -> Path:
    """The first member marked encrypted (flag bit 0) or compressed with another method, in both of its headers."""
    write_zip(path, pngs())
    raw = bytearray(path.read_bytes())
    for signature, flags_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = raw.index(signature)
        raw[at + flags_at : at + flags_at + 2] = struct.pack("<H", flag_bits)
        if method is not None:
            raw[at + method_at : at + method_at + 2] = struct.pack("<H", method)
    path.write_bytes(bytes(raw))
    return path


def fast_file(path: Path, edit=None, count: int = 2, labels=(0, 1)) -> Path:
    """A valid fast file of `count` 8x8 RGB images, its JSON header passed through `edit` (and the prefix fixed)."""
    writer = fastformat.FastWriter(path, 3, SIDE, SIDE)
    hasher = fastformat.ContentHasher()
    for index in range(count):
        pixels = np.random.default_rng(index).integers(0, 256, (3, SIDE, SIDE), dtype=np.uint8)
        writer.add(pixels)
        hasher.add(images.digest(pixels))
    classes = np.array(labels[:count])
    content_hash = hasher.finish(3, (SIDE, SIDE), ["a", "b"], classes)
    writer.finish(classes, {"label_names": ["a", "b"], "content_hash": content_hash})
    if edit is None:
        return path
    raw = path.read_bytes()
    _, offset, length = struct.unpack("<8sQQ", raw[:24])
    header = json.dumps(edit(json.loads(raw[offset : offset + length]))).encode()
    path.write_bytes(struct.pack("<8sQQ", fastformat.MAGIC, offset, len(header)) + raw[24:offset] + header)
    return path


def deep(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile-data")


def _zip_cases(root: Path) -> list[Case]:
    zips = {
        "declared 1.5 GiB member": declared_size_zip(root / "declared.zip", 3 * GIB // 2),
        "inflating 48 MiB member": inflating_zip(root / "inflating.zip", 48 * 2**20),
        "png header 60000x60000": write_zip(
            root / "pixels.zip", {member(0): png(0), member(1): png_header(60000, 60000)}
        ),
        "first png 4096x4096": write_zip(root / "first.zip", {member(0): png_header(4096, 4096)}),
        "overlapping members": overlapping_zip(root / "overlap.zip"),
        "encrypted member": flagged_zip(root / "encrypted.zip", flag_bits=1),
        "bzip2 member": flagged_zip(root / "bzip2.zip", method=zipfile.ZIP_BZIP2),
        "label 1e8": meta_zip(root / "big-label.zip", labelled([10**8, 0, 1])),
        "label -1": meta_zip(root / "negative.zip", labelled([-1, 0, 1])),
        "string label": meta_zip(root / "string.zip", labelled(["x", 0, 1])),
        "ragged vectors": meta_zip(root / "ragged.zip", labelled([[0.0], [0.0, 1.0], [1.0]])),
        "too few label_names": meta_zip(root / "names.zip", labelled([0, 1, 2], label_names=["a"])),
        "bool label": meta_zip(root / "bool.zip", labelled([True, 0, 1])),
        "nan vector": meta_zip(root / "nan.zip", b'{"labels": [["%s", [NaN]]]}' % member(0).encode()),
        "json 100000 deep": meta_zip(root / "deep.zip", deep()),
        "json a list": meta_zip(root / "list.zip", [1, 2]),
        "json not json": meta_zip(root / "broken.zip", b'{"labels": [['),
        "labels not pairs": meta_zip(root / "pairs.zip", {"labels": [1, 2, 3]}),
        "ganforge not an object": meta_zip(root / "own.zip", {"labels": None, "ganforge": 3}),
        "json past its cap": meta_zip(root / "huge-json.zip", b" " * (2**20 + 4096 * 3 + 1) + b"{}"),
    }
    good = write_zip(root / "good.zip", {**pngs(), "dataset.json": json.dumps(labelled([0, 1, 0])).encode()})
    raw = good.read_bytes()
    zips["truncated zip"] = root / "truncated.zip"
    zips["truncated zip"].write_bytes(raw[: len(raw) // 2])
    crc = bytearray(raw)
    crc[raw.index(b"IDAT") + 8] ^= 0xFF  # inside the first member's data: its CRC-32 no longer matches
    zips["bad crc first member"] = root / "crc.zip"
    zips["bad crc first member"].write_bytes(bytes(crc))
    cases = []
    for name, path in zips.items():
        # `info` decodes the first image only; a later image's header is checked when the image is read.
        if name != "png header 60000x60000":
            cases.append(Case(f"info: {name}", ("dataset", "info", str(path))))
        cases.append(Case(f"verify: {name}", ("dataset", "verify", str(path), "--workers", "0")))
    return cases


def _fast_cases(root: Path) -> list[Case]:
    fast = {
        "header a list": fast_file(root / "list.gfd", lambda h: [h]),
        "count x": fast_file(root / "count.gfd", lambda h: h | {"count": "x"}),
        "channels 1.5": fast_file(root / "channels.gfd", lambda h: h | {"channels": 1.5, "count": 4}),
        "channels true": fast_file(root / "true.gfd", lambda h: h | {"channels": True}),
        "label_names a string": fast_file(root / "names.gfd", lambda h: h | {"label_names": "ab"}),
        "content_hash a list": fast_file(root / "hash.gfd", lambda h: h | {"content_hash": [1]}),
        "format version 2": fast_file(root / "version.gfd", lambda h: h | {"format_version": 2}),
        "class index 7": fast_file(root / "class.gfd", labels=(0, 7)),
    }
    raw = fast_file(root / "good.gfd").read_bytes()
    for name, data in {
        "shorter than its prefix": raw[:12],
        "header length 2**62": raw[:16] + struct.pack("<Q", 2**62) + raw[24:],
        "bytes after the header": raw + b" ",
        "header cut short": raw[:-5],
    }.items():
        fast[name] = root / f"{name.replace(' ', '-').replace('*', '')}.gfd"
        fast[name].write_bytes(data)
    deep_header = root / "deep-header.gfd"
    _, offset, _ = struct.unpack("<8sQQ", raw[:24])
    deep_header.write_bytes(struct.pack("<8sQQ", fastformat.MAGIC, offset, 200_000) + raw[24:offset] + deep())
    fast["header JSON 100000 deep"] = deep_header
    cases = []
    for name, path in fast.items():  # info and verify accept and refuse the same headers
        cases.append(Case(f"info: fast {name}", ("dataset", "info", str(path))))
        cases.append(Case(f"verify: fast {name}", ("dataset", "verify", str(path), "--workers", "0")))
    return cases


def _build_cases(root: Path) -> list[Case]:
    src = root / "src"
    for name, data in pngs().items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    csvs = {
        "csv label -1": b"file,label\n00000/img00000000.png,-1\n00000/img00000001.png,0\n00000/img00000002.png,1\n",
        "csv not utf-8": b"00000/img00000000.png,\xe9t\xe9\n",
        "csv label of 5000 digits": b"00000/img00000000.png,%s\n00000/img00000001.png,0\n" % (b"7" * 5000),
    }
    cases = []
    for index, (name, data) in enumerate(csvs.items()):
        (root / f"labels{index}.csv").write_bytes(data)
        dest = root / f"csv{index}.zip"
        args = ("dataset", "build", str(src), str(dest), "--transform", "none", "--workers", "0")
        cases.append(Case(f"build: {name}", (*args, "--labels", str(root / f"labels{index}.csv")),
                          absent=(str(dest), f"{dest}.partial")))  # fmt: skip
    sources = {
        "dataset.json label -1": meta_zip(root / "b-negative.zip", labelled([-1, 0, 1])),
        "dataset.json label 1e8": meta_zip(root / "b-big.zip", labelled([10**8, 0, 1])),
        "dataset.json too few label_names": meta_zip(root / "b-names.zip", labelled([0, 1, 2], label_names=["a"])),
        "dataset.json class name of 5000 digits": meta_zip(
            root / "b-digits.zip", labelled([0, 1, 0], label_names=["7" * 5000, "1"])
        ),
        "dataset.json 100000 deep": meta_zip(root / "b-deep.zip", deep()),
        "declared 1.5 GiB member": declared_size_zip(root / "b-declared.zip", 3 * GIB // 2),
        "source png 60000x60000": write_zip(root / "b-pixels.zip", {member(0): png_header(60000, 60000)}),
        "overlapping members": overlapping_zip(root / "b-overlap.zip"),
    }
    for name, path in sources.items():
        dest = root / f"{path.stem}-out.gfd"
        args = ("dataset", "build", str(path), str(dest), "--resolution", str(SIDE), "--workers", "0")
        cases.append(Case(f"build: {name}", args, absent=(str(dest), f"{dest}.partial")))
    (root / "a-file").write_text("not a folder")
    cases.append(Case("build: DEST under a regular file", ("dataset", "build", str(src), str(root / "a-file" / "o.zip"),
                                                            "--transform", "none")))  # fmt: skip
    return cases


def not_utf8_folder(folder: Path) -> Path:
    """Three images, one of them under a file name whose bytes are not UTF-8 (as a Latin-1 system names `é.png`)."""
    folder.mkdir()
    for index, data in enumerate(pngs().values()):
        name = b"\xe9t\xe9.png" if index == 1 else f"{index}.png".encode()
        (folder / os.fsdecode(name)).write_bytes(data)
    return folder


def _command_cases(root: Path) -> list[Case]:
    """The same readers behind `metrics` and `train` (their --dry-run opens the data)."""
    good = meta_zip(root / "c-good.zip", labelled([0, 1, 0]))
    bomb = declared_size_zip(root / "c-declared.zip", 3 * GIB // 2)
    big = meta_zip(root / "c-big.zip", labelled([10**8, 0, 1]))
    latin1 = not_utf8_folder(root / "c-latin1")
    outdir = root / "runs"
    return [
        Case("info: a file name not UTF-8", ("dataset", "info", str(latin1))),
        Case("verify: a file name not UTF-8", ("dataset", "verify", str(latin1), "--workers", "0")),
        Case("train --dry-run: a file name not UTF-8",
             ("train", "--data", str(latin1), "--outdir", str(outdir), "--dry-run"), absent=(str(outdir),)),
        Case("metrics --fake: declared 1.5 GiB member",
             ("metrics", "--real", str(good), "--fake", str(bomb), "--metrics", "swd16k", "--workers", "0")),
        Case("metrics --real: label 1e8", ("metrics", "--real", str(big), "--fake", str(good), "--metrics", "swd16k")),
        Case("train --dry-run: label 1e8", ("train", "--data", str(big), "--outdir", str(outdir), "--cond",
                                           "--dry-run"), absent=(str(outdir),)),
        Case("train --dry-run: declared 1.5 GiB member",
             ("train", "--data", str(bomb), "--outdir", str(outdir), "--dry-run"), absent=(str(outdir),)),
    ]  # fmt: skip


def test_hostile_datasets_are_refused_in_one_line(made):
    # The first command imports torch in the worker: a case of its own with time for that.
    warm_up = Case("info: no such dataset", ("dataset", "info", str(made / "missing.zip")), seconds=60)
    cases = [warm_up] + _zip_cases(made) + _fast_cases(made) + _build_cases(made) + _command_cases(made)
    outcomes = assert_all_rejected(cases, made)
    # One reader for every command: info and verify give the same message for each fast-format header.
    by_name = {outcome.name: outcome.stderr for outcome in outcomes}
    for name in (case.name for case in cases if case.name.startswith("info: fast ")):
        assert by_name[name] == by_name[name.replace("info:", "verify:")], name
