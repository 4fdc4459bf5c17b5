"""Bad input to `ganforge export`: each problem is one line naming the flag or file and the fix, exit 2, no traceback,
nothing written; and the defaults that depend on the precision."""

import math
import os
import shlex
import sys

import pytest
from click.testing import CliRunner
from export_helpers import export, tiny_snapshot

from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.export import export_network
from ganforge.export.options import MAX_IMAGES, UINT8_LEVEL, ExportOptions
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
        "error: --batch 0: a number of images from 1 to 65536, or 'dynamic' for any batch size",
        "error: --format pt2 --precision int8: not offered, PyTorch 2.13 no longer ships PT2E quantization (it moved "
        "to torchao), and a program quantized with it needs torchao to load; use --format onnx --precision int8",
        f"error: --out {missing}: folder {missing.parent} does not exist; create it first",
        "error: --trunc 1.5: must be a psi from 0 (the average image) to 1 (no truncation)",
    ]
    result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path / "G.onnx", "--format", "pt2",
                    "--keep-float", "synthesis.b4", "--check-fid", "1")  # fmt: skip
    assert result.output.splitlines() == [
        f"error: --out {tmp_path / 'G.onnx'}: a pt2 file is named NAME.pt2",
        "error: --keep-float: only used with --precision int8",
        "error: --check-fid 1: FID and KID need at least 4 images, or 0 for no FID check",
    ]
    result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path / "G.onnx", "--keep-float",
                    "auto,synthesis.b4", "--calib-method", "entropy", "--int8-weights", "per-tensor")  # fmt: skip
    assert result.output.splitlines() == [
        "error: --keep-float auto,synthesis.b4: auto chooses the layers itself; give auto alone",
        "error: --keep-float: only used with --precision int8",
        "error: --int8-weights: only used with --precision int8",
        "error: --calib-method: only used with --precision int8",
    ]
    result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path, "--format", "pt2")
    assert f"error: --out {tmp_path}: is a folder; name the file to write, e.g. {tmp_path / 'G'}.pt2" in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_help_examples_are_commands_that_run(tmp_path, monkeypatch):
    """Each example of `export --help` fails only for want of its network file: its options go together (one example
    once asked for a pt2 file in fp16, which export refuses)."""
    lines = CliRunner().invoke(main, ["export", "--help"]).output.split("Examples:", 1)[1].splitlines()
    examples = [shlex.split(line)[2:] for line in lines if line.strip()]
    assert examples
    monkeypatch.chdir(tmp_path)
    for words in examples:
        result = export(*words)
        assert result.exit_code == 2 and result.output.startswith("error: snapshot.safetensors: no such file"), words


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
        ("fp16", False, None, 0.05, 512, 2048),
        ("int8", True, None, None, 512, 2048),
        ("int8", False, 0.2, 0.2, 512, 2048),
    ],
)
def test_limits_and_fid_counts_depend_on_the_precision(precision, uint8, given, limit, fid_cpu, fid_cuda, tmp_path):
    options = ExportOptions(tmp_path / "G.safetensors", tmp_path / "G.onnx", precision=precision, uint8=uint8,
                            max_abs_diff=given)  # fmt: skip
    assert options.max_abs_diff_limit() == limit
    assert (options.fid_images("cpu"), options.fid_images("cuda")) == (fid_cpu, fid_cuda)
    assert ExportOptions(tmp_path / "G", tmp_path / "G.onnx", precision=precision, check_fid=5).fid_images("cpu") == 5


def test_numbers_out_of_range_are_refused_where_they_are_parsed(tmp_path):
    def problems(**fields):
        with pytest.raises(UserError) as err:
            ExportOptions.parse(network=tmp_path / "G.safetensors", out=tmp_path / "G.onnx", **fields)
        return err.value.problems

    huge = 10**4000  # click's INT lets any size of integer through
    assert problems(trunc=math.nan) == ["--trunc nan: must be a psi from 0 (the average image) to 1 (no truncation)"]
    assert problems(max_abs_diff=math.nan, max_fid_delta=math.inf) == [
        "--max-abs-diff nan: must be a pixel difference on the [-1, 1] scale, from 0 to 2 (any difference)",
        "--max-fid-delta inf: must be a finite FID of 0 or more",
    ]
    assert problems(check=huge, check_fid=MAX_IMAGES + 1, calib=huge, seed=2**64) == [
        "--check 100000000000... (4001 digits): must be from 1 to 50,000",
        "--check-fid 50001: must be from 0 to 50,000",
        "--calib 100000000000... (4001 digits): must be from 1 to 50,000",
        "--seed 18446744073709551616: must be from 0 to 9,223,372,036,854,775,804",
    ]
    int8 = dict(precision="int8")
    for kimg in (math.nan, -1.0, 1e9, 1e-4):
        assert problems(qat_kimg=kimg, **int8) == [
            f"--qat-kimg {kimg:g}: must be thousands of images, from 0.001 (one image) to 1000"
        ]
    assert problems(qat_kimg=1.0) == ["--qat-kimg: only used with --precision int8"]
    assert problems(qat_kimg=1.0, keep_float="auto", **int8) == [
        "--qat-kimg with --keep-float auto: the fine-tuning is for one set of int8 layers, and auto tries several; "
        "name the layers to keep in float, or leave --keep-float out"
    ]
    assert problems(qat_kimg=1.0, calib_method="entropy", **int8) == [
        "--qat-kimg with --calib-method entropy: the fine-tuning simulates the extremes' ranges (minmax) only; leave "
        "--calib-method out"
    ]
    parsed = ExportOptions.parse(network=tmp_path / "G", out=tmp_path / "G.onnx", qat_kimg=0.002, **int8)
    assert parsed.qat_images() == 2
    assert problems(batch="9" * 5000) == [f"--batch {'9' * 21}...: a number of images from 1 to 65536, or 'dynamic' "
                                          "for any batch size"]  # fmt: skip
    assert ExportOptions.parse(network=tmp_path / "G", out=tmp_path / "G.onnx", batch="065536").batch == 65536


def test_options_made_in_python_meet_the_checks_of_the_command_line(tmp_path):
    made = ExportOptions(tmp_path / "none.safetensors", tmp_path / "G.onnx", trunc=math.nan, noise="bogus", check=0,
                         batch=2.5)  # fmt: skip
    with pytest.raises(UserError) as err:
        export_network(made)
    assert err.value.problems == [
        "--trunc nan: must be a psi from 0 (the average image) to 1 (no truncation)",
        "--batch 2.5: must be from 1 to 65,536",
        "--noise bogus: unknown; use one of const, input",
        "--check 0: must be from 1 to 50,000",
    ]


def test_a_model_or_card_path_that_is_not_a_regular_file_is_refused_before_loading(tmp_path):
    os.mkfifo(tmp_path / "G.onnx")
    (tmp_path / "H.onnx.json").symlink_to(tmp_path / "elsewhere.json")
    for name, kind in (("G.onnx", "G.onnx: is a FIFO"), ("H.onnx", "H.onnx.json: is a symbolic link")):
        result = export("--network", tmp_path / "none.safetensors", "--out", tmp_path / name)
        assert result.exit_code == 2 and len(result.output.splitlines()) == 1 and kind in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["G.onnx", "H.onnx.json"]


def test_a_fixed_batch_whose_check_does_not_fit_is_refused_with_the_figure(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr("ganforge.memory.available_host_bytes", lambda: 2**20)
    monkeypatch.setattr("ganforge.memory.available_device_bytes", lambda device: None)
    result = export("--network", snapshot, "--out", tmp_path / "G.pt2", "--format", "pt2", "--batch", "4096")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith("error: --batch 4096: the check runs 4096 images of 16 px at once, in PyTorch and "
                                    "in the exported model, needs ")  # fmt: skip
    assert "1.0 MiB of memory is available; use a smaller --batch, or dynamic" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_fine_tuning_that_does_not_fit_is_refused_with_the_figure(snapshot, tmp_path, monkeypatch):
    """Memory for the check (two batches of 16 images) but not for the fine-tuning's batch with its gradients."""
    from ganforge.export.check import CHECK_BATCH
    from ganforge.generate import budget
    from ganforge.snapshot import load_snapshot

    G = load_snapshot(snapshot)[0]
    per_image = budget.synthesis_peak_bytes(G, lambda ws: G.synthesis(ws, noise_mode="const"))
    monkeypatch.setattr("ganforge.memory.available_host_bytes", lambda: 3 * CHECK_BATCH * per_image)
    monkeypatch.setattr("ganforge.memory.available_device_bytes", lambda device: None)
    result = export("--network", snapshot, "--out", tmp_path / "G.onnx", "--precision", "int8", "--qat-kimg", "1")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith("error: --qat-kimg: the fine-tuning runs 16 images of 16 px at once with their "
                                    "gradients, needs ")  # fmt: skip
    assert result.output.rstrip().endswith("leave --qat-kimg out, or export on a machine with more memory")
    assert list(tmp_path.iterdir()) == []
