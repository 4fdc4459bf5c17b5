"""Bad input to `ganforge export`: each problem is one line naming the flag or file and the fix, exit 2, no traceback,
nothing written; and the defaults that depend on the precision."""

import sys

import pytest
from export_helpers import export, tiny_snapshot

from ganforge.export.options import UINT8_LEVEL, ExportOptions
from ganforge.nets import Discriminator
from ganforge.snapshot import save_discriminator


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors")


def test_options_are_checked_together_before_anything_is_loaded(tmp_path):
    missing = tmp_path / "missing" / "G.pt2"
    result = export("--network", tmp_path / "none.safetensors", "--out", missing, "--format", "pt2", "--precision",
                    "int8", "--batch", "0", "--trunc", "1.5", "--keep-float", "synthesis.b4")  # fmt: skip
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.splitlines() == [
        "error: --batch 0: a positive number of images, or 'dynamic' for any batch size",
        "error: --format pt2 --precision int8: not offered, PyTorch 2.13 no longer ships PT2E quantization (it moved "
        "to torchao), and a program quantized with it needs torchao to load; use --format onnx --precision int8",
        f"error: --out {missing}: folder {missing.parent} does not exist; create it first",
        "error: --trunc 1.5: psi must be from 0 (the average image) to 1 (no truncation)",
    ]
    result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path / "G.onnx", "--format", "pt2",
                    "--keep-float", "synthesis.b4", "--check-fid", "1")  # fmt: skip
    assert result.output.splitlines() == [
        f"error: --out {tmp_path / 'G.onnx'}: a pt2 file is named NAME.pt2",
        "error: --keep-float: only used with --precision int8",
        "error: --check-fid 1: FID and KID need at least 4 images, or 0 for no FID check",
    ]
    result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path, "--format", "pt2")
    assert f"error: --out {tmp_path}: is a folder; name the file to write, e.g. {tmp_path / 'G'}.pt2" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_generator_is_refused(tmp_path):
    save_discriminator(tmp_path / "D.safetensors", Discriminator(resolution=16, channel_base=64, channel_max=8), {})
    result = export("--network", tmp_path / "D.safetensors", "--out", tmp_path / "D.pt2", "--format", "pt2")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "D.safetensors: a ganforge discriminator file but not a ganforge snapshot file" in result.output
    (tmp_path / "notes.txt").write_text("hello")
    result = export("--network", tmp_path / "notes.txt", "--out", tmp_path / "N.pt2", "--format", "pt2")
    assert result.exit_code == 2 and "notes.txt: of unknown content" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D.safetensors", "notes.txt"]


def test_a_missing_export_extra_is_named_in_one_line(snapshot, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an environment without the extra looks like
    result = export("--network", snapshot, "--out", tmp_path / "G.onnx")
    assert result.exit_code == 2
    assert result.output == "error: --format onnx needs onnxruntime: pip install 'ganforge[export]'\n"
    assert list(tmp_path.iterdir()) == []


def test_keep_float_must_name_quantizable_layers(snapshot, tmp_path):
    pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")
    args = ["--network", snapshot, "--out", tmp_path / "G.onnx", "--precision", "int8"]
    result = export(*args, "--keep-float", "synthesis.b4,mapping")
    assert result.exit_code == 2 and result.output.splitlines() == [
        "error: --keep-float mapping: no quantizable layer there; choose from synthesis.b4.conv1, synthesis.b8.conv0, "
        "synthesis.b8.conv1, synthesis.b16.conv0, synthesis.b16.conv1"
    ]
    result = export(*args, "--keep-float", "synthesis")
    assert (
        result.output == "error: --keep-float: keeps every layer in float, so nothing is int8; use --precision fp32\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("precision", "uint8", "given", "limit", "fid_cpu", "fid_cuda"),
    [
        ("fp32", False, None, 1e-3, 0, 0),
        ("fp32", True, None, UINT8_LEVEL, 0, 0),
        ("fp16", False, None, 0.05, 128, 1000),
        ("int8", True, None, None, 128, 1000),
        ("int8", False, 0.2, 0.2, 128, 1000),
    ],
)
def test_limits_and_fid_counts_depend_on_the_precision(precision, uint8, given, limit, fid_cpu, fid_cuda, tmp_path):
    options = ExportOptions(tmp_path / "G.safetensors", tmp_path / "G.onnx", precision=precision, uint8=uint8,
                            max_abs_diff=given)  # fmt: skip
    assert options.max_abs_diff_limit() == limit
    assert (options.fid_images("cpu"), options.fid_images("cuda")) == (fid_cpu, fid_cuda)
    assert ExportOptions(tmp_path / "G", tmp_path / "G.onnx", precision=precision, check_fid=5).fid_images("cpu") == 5
