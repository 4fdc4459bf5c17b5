"""Every stage of an export is shown while it runs: a bar on a terminal, a line when it starts and one with its
duration when it ends in a log or pipe; and the int8 card records the settings of the calibration it ran."""

import json
import re
import sys

import pytest
from export_helpers import PixelFeatures, export, tiny_snapshot

from ganforge.export import ExportOptions, check, export_network
from ganforge.metrics import inception
from progress_helpers import on_a_terminal

pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")

# A fixed batch of 3: the calibration draws 4 latents rounded up to 6, the check 4 images in 2 batches of 3.
INT8 = dict(precision="int8", batch=3, calib=4, check=4, check_fid=4, max_fid_delta=10.0, keep_float=("synthesis.b16",))
STAGES = [
    "export: torch.export trace and ONNX translation",
    "export: int8 calibration on 6 latents",
    "export: int8 quantization of 3 convolutions",
    "export: loading the ONNX model in onnxruntime",
    "export: check on 6 eager and exported images and their Inception features",
    "export: FID and KID of 4 image pairs",
]


@pytest.fixture
def cheap_inception(monkeypatch):
    """The stand-in for Inception and a constant Fréchet distance (the real ones run in test_export_onnx.py)."""
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures())
    monkeypatch.setattr(check, "frechet_distance", lambda *moments: 0.5)


def test_a_piped_int8_export_writes_a_line_as_each_stage_starts_and_ends(tmp_path, cheap_inception):
    args = ["--precision", "int8", "--batch", "3", "--calib", "4", "--check", "4", "--check-fid", "4"]
    args += ["--keep-float", "synthesis.b16"]
    result = export("--network", tiny_snapshot(tmp_path / "G.safetensors"), "--out", tmp_path / "G.onnx", *args)
    assert result.exit_code == 0, result.output
    *lines, note = result.stdout.splitlines()
    assert note.startswith(f"wrote {tmp_path / 'G.onnx'} (onnx int8")
    assert lines[0::2] == [f"{stage}: started" for stage in STAGES]
    for stage, line in zip(STAGES, lines[1::2], strict=True):
        assert re.fullmatch(re.escape(stage) + r": done in \d+\.\d s( \(.*\))?", line), line
    parts = r"\(loading Inception \d+\.\d s, eager \d+\.\d s, exported \d+\.\d s, Inception features \d+\.\d s\)"
    assert re.search(parts + "$", lines[9]), lines[9]
    assert "\r" not in result.output and result.stderr == ""


def test_on_a_terminal_each_stage_has_a_bar_and_the_card_records_the_calibration(
    tmp_path, monkeypatch, cheap_inception
):
    on_a_terminal(monkeypatch)
    network, out = tiny_snapshot(tmp_path / "G.safetensors"), tmp_path / "G.onnx"
    card = export_network(ExportOptions(network, out, **INT8))
    drawn = sys.stderr.getvalue()
    assert sys.stdout.getvalue() == "" and "\r" in drawn
    for stage in STAGES:
        assert stage + ": " in drawn, stage
    assert "export: int8 calibration on 6 latents: 100%" in drawn and "6/6" in drawn  # onnxruntime asked for all 6
    settings = card["quantization"]
    calibration = {key: settings["calibration"][key] for key in ("latents", "drawn", "batch", "seed")}
    assert calibration == {"latents": 4, "drawn": 6, "batch": 3, "seed": 1}
    assert settings["float_layers"] == ["synthesis.b16.conv0", "synthesis.b16.conv1"]
    assert settings["keep_float"] == ["synthesis.b16"] and settings["quantized_nodes"] == 3
    assert card["check"]["limits"] == {"max_abs_diff": None, "max_fid_delta": 10.0} and card["check"]["fid"] == 0.5
    assert json.loads((tmp_path / "G.onnx.json").read_text()) == json.loads(json.dumps(card))
