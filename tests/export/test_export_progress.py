"""On a terminal every stage of an export draws a bar while it runs (the lines a log gets are tested with a failing
export in test_export_onnx.py), and the int8 card records the settings of the calibration that ran."""

import json
import sys

import pytest
from export_helpers import PixelFeatures, tiny_snapshot

from ganforge.export import ExportOptions, check, export_network
from ganforge.metrics import inception
from progress_helpers import on_a_terminal

pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")

# A fixed batch of 3: the calibration draws 4 latents rounded up to 6, the check 4 images in 2 batches of 3.
INT8 = dict(precision="int8", batch=3, calib=4, check=4, check_fid=4, max_fid_delta=10.0, keep_float=("synthesis.b4",))
STAGES = [
    "export: torch.export trace and ONNX translation",
    "export: int8 calibration on 6 latents",
    "export: int8 quantization of 2 convolutions",
    "export: loading the ONNX model in onnxruntime",
    "export: check on 6 eager and exported images and their Inception features",
    "export: 6 eager images of other latents and their Inception features",
    "export: FID and KID against 4 eager images of other latents",
]


@pytest.fixture
def cheap_inception(monkeypatch):
    """The stand-in for Inception and a constant Fréchet distance (the real ones run in test_export_onnx.py)."""
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures())
    monkeypatch.setattr(check, "frechet_distance", lambda *moments: 0.5)


def test_on_a_terminal_each_stage_has_a_bar_and_the_card_records_the_calibration(
    tmp_path, monkeypatch, cheap_inception
):
    on_a_terminal(monkeypatch)
    # 8 px (blocks b4 and b8): a 16 px generator's third block would add only a second of tracing
    network, out = tiny_snapshot(tmp_path / "G.safetensors", resolution=8), tmp_path / "G.onnx"
    card = export_network(ExportOptions(network, out, **INT8))
    drawn = sys.stderr.getvalue()
    assert sys.stdout.getvalue() == "" and "\r" in drawn
    for stage in STAGES:
        assert stage + ": " in drawn, stage
    assert "export: int8 calibration on 6 latents: 100%" in drawn and "6/6" in drawn  # onnxruntime asked for all 6
    settings = card["quantization"]
    calibration = {key: settings["calibration"][key] for key in ("latents", "drawn", "batch", "seed")}
    assert calibration == {"latents": 4, "drawn": 6, "batch": 3, "seed": 1}
    assert settings["float_layers"] == ["synthesis.b4.conv1"]
    assert settings["keep_float"] == ["synthesis.b4"] and settings["quantized_nodes"] == 2
    assert card["check"]["limits"] == {"max_abs_diff": None, "max_fid_delta": 10.0} and card["check"]["fid_delta"] == 0
    assert json.loads((tmp_path / "G.onnx.json").read_text()) == json.loads(json.dumps(card))
