"""Hostile checkpoint folders and run folders: `checkpoint verify`, `checkpoint diff` and `train` (which reads the run
folders of OUTDIR and the checkpoint it resumes) each refuse with one line and exit 2, in bounded time and memory.

Every input starts from a real checkpoint of a tiny run made once for the module; most edits are signed again in the
manifest (its SHA-256 and size), as an attacker who edits a file would do, so that they reach the parsers and the
checks behind the integrity check.
"""

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile_harness import Case, assert_all_rejected

from ganforge.cli import main
from launch_helpers import tiny_archive

TRAIN = ("--cfg", "tiny", "--batch", "8", "--tick", "0.008", "--snap", "1", "--workers", "0", "--device", "cpu",
         "--aug", "noaug", "--no-report")  # fmt: skip
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path]:
    """(dataset, a valid checkpoint folder) of a tiny run, never modified."""
    root = tmp_path_factory.mktemp("hostile_checkpoint")
    data = tiny_archive(root)
    args = ["train", "--data", str(data), "--outdir", str(root / "runs"), "--kimg", "0.008", *TRAIN]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (ckpt,) = (root / "runs").glob("*/checkpoints/ckpt-000000008")
    return data, ckpt


def _rehash(ckpt: Path) -> None:
    manifest = json.loads((ckpt / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        data = (ckpt / name).read_bytes()
        entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (ckpt / "manifest.json").write_text(json.dumps(manifest))


def _manifest(text: bytes):
    return lambda ckpt: (ckpt / "manifest.json").write_bytes(text)


def _manifest_field(**fields):
    def edit(ckpt):
        manifest = json.loads((ckpt / "manifest.json").read_text())
        for key, value in fields.items():
            manifest[key] = value
        (ckpt / "manifest.json").write_text(json.dumps(manifest))

    return edit


def _state(text: bytes):
    """state.json replaced, and the manifest signed again."""

    def edit(ckpt):
        (ckpt / "state.json").write_bytes(text)
        _rehash(ckpt)

    return edit


def _state_edit(change):
    """An edit of the parsed state.json (`change(document)`), signed again."""

    def edit(ckpt):
        document = json.loads((ckpt / "state.json").read_text())
        change(document["state"])
        (ckpt / "state.json").write_text(json.dumps(document))
        _rehash(ckpt)

    return edit


def _grow(name: str, size: int):
    """A file made `size` bytes long (sparse: no disk used); its manifest entry keeps the real size."""
    return lambda ckpt: os.truncate(ckpt / name, size)


def _declared_state_size(ckpt):
    manifest = json.loads((ckpt / "manifest.json").read_text())
    manifest["files"]["state.json"]["size"] = 9 * 2**20
    (ckpt / "manifest.json").write_text(json.dumps(manifest))
    os.truncate(ckpt / "state.json", 9 * 2**20)


def _header_length(ckpt):
    data = bytearray((ckpt / "tensors.safetensors").read_bytes())
    data[:8] = struct.pack("<Q", 2**62)
    (ckpt / "tensors.safetensors").write_bytes(bytes(data))
    _rehash(ckpt)


def _fifo(ckpt):
    (ckpt / "state.json").unlink()
    os.mkfifo(ckpt / "state.json")


def _manifest_fifo(ckpt):
    (ckpt / "manifest.json").unlink()
    os.mkfifo(ckpt / "manifest.json")


def _tensors_from_a_device(ckpt):
    (ckpt / "tensors.safetensors").unlink()
    (ckpt / "tensors.safetensors").symlink_to("/dev/zero")


def _many_files(ckpt):
    for i in range(300):
        (ckpt / f"{i:03d}{'x' * 200}.pkl").write_bytes(b"")


def _nan_tick(document):
    document["loop"]["cur_tick"] = float("nan")


CHECKPOINT_EDITS = {
    "manifest nested 100,000 deep": _manifest(DEEP),
    "manifest nested 30,000 deep": _manifest(b"[" * 30_000 + b"]" * 30_000),  # under the size cap: parsed
    "manifest with a 5000-digit size": _manifest(b'{"format": "ganforge-checkpoint", "size": ' + b"9" * 5000 + b"}"),
    "manifest with sizes of 1e999": _manifest_field(files={"tensors.safetensors": {"sha256": "0" * 64, "size": 1e999},
                                                           "state.json": {"sha256": "0" * 64, "size": 1}}),
    "manifest files a list": _manifest_field(files=["tensors.safetensors", "state.json"]),
    "manifest nimg a string": _manifest_field(nimg="8"),
    "manifest format a long string": _manifest_field(format="x" * 5000),
    "manifest version a 4000-digit number": _manifest_field(format_version=10**4000),
    "manifest of 2 GB": _grow("manifest.json", 2**31),
    "manifest NaN": _manifest(b"NaN"),
    "tensors grown to 4 GB": _grow("tensors.safetensors", 4 * 2**30),
    "state.json larger than a state": _declared_state_size,
    "state.json nested 100,000 deep": _state(b'{"format": "ganforge-checkpoint", "state": ' + DEEP + b"}"),
    "state.json NaN literal": _state(b'{"format": "ganforge-checkpoint", "state": NaN}'),
    "state.json 5000-digit number": _state(b'{"format": "ganforge-checkpoint", "state": ' + b"7" * 5000 + b"}"),
    "state.json a list": _state(b"[]"),
    "state a list": _state(b'{"format": "ganforge-checkpoint", "state": []}'),
    "tensor reference a list": _state_edit(lambda s: s["loop"].update(pl_mean={"__tensor__": [1] * 10000})),
    "float tag a long string": _state_edit(lambda s: s["loop"].update(pl_mean={"__float__": "x" * 10000})),
    "items not pairs": _state_edit(lambda s: s["opt_G"].update(state={"__items__": [[1, 2, 3]] * 1000})),
    "a tensor used twice": _state_edit(lambda s: s["loop"].update(pl_mean=s["G_ema"]["mapping.w_avg"])),
    "safetensors header of 2^62 bytes": _header_length,
    "state.json a FIFO": _fifo,
    "manifest.json a FIFO": _manifest_fifo,
    "tensors.safetensors a link to /dev/zero": _tensors_from_a_device,
    "300 unexpected files": _many_files,
    "no rng": _state_edit(lambda s: s.pop("rng")),
    "rng state of the wrong size": _state_edit(lambda s: s["rng"].update(cuda=[[0] * 10])),
    "progress out of range": _state_edit(lambda s: s["loop"].update(cur_nimg=-8)),
    "cur_tick NaN": _state_edit(_nan_tick),
    "config a 100,000-key object": _state_edit(lambda s: s.update(config={f"k{i}": i for i in range(100_000)})),
}  # fmt: skip


def _run_folder(outdir: Path, config: bytes) -> None:
    """A checkpointed run folder that the tiny command would continue (its name), holding `config` as config.json."""
    run = outdir / "00000-tiny-tiny-gpus1-batch8"
    (run / "checkpoints" / "ckpt-000000008").mkdir(parents=True)
    (run / "config.json").write_bytes(config)


RUN_CONFIGS = {
    "config.json a list": b"[]",
    "config.json truncated": b'{"data": {"path": "tiny.zip"}, "pre',
    "config.json nested 100,000 deep": DEEP,
    "config.json of wrong types": b'{"data": {"path": ["x"]}, "preset": 1, "run": {"resume": null}}',
    "config.json not UTF-8": b'{"preset": "\xff\xfe"}',
}


def test_hostile_checkpoints_and_run_folders_are_refused_in_one_line(made, tmp_path):
    data, valid = made
    cases = []
    for i, (name, edit) in enumerate(CHECKPOINT_EDITS.items()):
        ckpt = shutil.copytree(valid, tmp_path / f"c{i}" / valid.name)
        edit(ckpt)
        cases.append(Case(f"verify: {name}", ("checkpoint", "verify", str(ckpt))))
        if i % 4 == 0:
            cases.append(Case(f"diff: {name}", ("checkpoint", "diff", str(valid), str(ckpt))))
        if i % 3 == 0:
            args = ("train", "--data", str(data), "--outdir", f"out{i}", "--kimg", "0.016", *TRAIN, "--resume",
                    str(ckpt))  # fmt: skip
            cases.append(Case(f"train --resume: {name}", args, absent=(f"out{i}",)))
    odd_names = tmp_path / "odd-names"
    (odd_names / "checkpoints" / "ckpt-²").mkdir(parents=True)  # isdigit() is true, int() refuses it
    odd_case = "verify: a run whose only checkpoint name has a superscript digit"
    cases.append(Case(odd_case, ("checkpoint", "verify", str(odd_names))))
    for i, (name, config) in enumerate(RUN_CONFIGS.items()):
        _run_folder(tmp_path / f"runs{i}", config)
        args = ("train", "--data", str(data), "--outdir", f"runs{i}", "--kimg", "0.016", *TRAIN)
        cases.append(Case(f"train: {name}", args, absent=(f"runs{i}/00001-tiny-tiny-gpus1-batch8",)))
    outcomes = assert_all_rejected(cases, tmp_path)
    for case, outcome in zip(cases, outcomes, strict=True):
        if case.name.startswith("train: "):
            assert "runs" in outcome.stderr and "config.json: " in outcome.stderr, outcome.stderr
