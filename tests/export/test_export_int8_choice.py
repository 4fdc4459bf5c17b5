"""int8 layers chosen by sensitivity (`--keep-float auto`) and the quantizer's settings (`--int8-weights`,
`--calib-method`): the ranking is deterministic and measures what it says, auto keeps in float the fewest layers from
the top of the ranking and stops at the first set that passes, and the card records the choice."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from export_helpers import PixelFeatures, export, tiny_snapshot

from ganforge.export import ExportOptions, check, onnx, quantize, sensitivity
from ganforge.export.wrapper import DeployableGenerator
from ganforge.metrics import inception
from ganforge.snapshot import load_snapshot

pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")

LAYERS = ["synthesis.b4.conv1", "synthesis.b8.conv0", "synthesis.b8.conv1", "synthesis.b16.conv0",
          "synthesis.b16.conv1"]  # fmt: skip


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(the deployable module of a tiny snapshot, its float ONNX model, the snapshot)"""
    folder = tmp_path_factory.mktemp("traced")
    snapshot = tiny_snapshot(folder / "G.safetensors", seed=4)
    module = DeployableGenerator(load_snapshot(snapshot)[0])
    onnx.export_onnx(module, folder / "float.onnx", module.example_inputs(2, torch.Generator().manual_seed(0)))
    return module, folder / "float.onnx", snapshot


def _quantize_only(module, traced_path, seed=1):
    def run(layers, path):
        quantize.quantize_int8(traced_path, path, module, layers, calib=8, seed=seed, show=False)

    return run


def test_the_sensitivity_ranking_is_deterministic_and_is_each_layers_own_pixel_error(traced, tmp_path):
    module, traced_path, _ = traced
    assert quantize.quantizable_layers(module) == LAYERS
    first = sensitivity.rank_layers(traced_path, module, LAYERS, _quantize_only(module, traced_path), 8, 3, tmp_path)
    again = sensitivity.rank_layers(traced_path, module, LAYERS, _quantize_only(module, traced_path), 8, 3, tmp_path)
    assert first == again and sorted(e.layer for e in first) == sorted(LAYERS)
    assert [e.mse for e in first] == sorted((e.mse for e in first), reverse=True) and first[-1].mse > 0
    # The top layer's figure is its own: that layer alone in int8 against the float model, by hand.
    top = first[0]
    path = tmp_path / "top.onnx"
    _quantize_only(module, traced_path)([top.layer], path)
    names = [spec.name for spec in module.inputs()]
    generator = torch.Generator().manual_seed(3)
    batches = [module.example_inputs(size, generator) for size in (1, 7)]  # as the check runs 8: one image, then 7
    one, float_model = onnx.OnnxRunner(path, names), onnx.OnnxRunner(traced_path, names)
    squared = [(one(*inputs).double() - float_model(*inputs).double()).square() for inputs in batches]
    assert top.mse == pytest.approx(torch.cat(squared).mean().item())
    assert top.psnr_db == pytest.approx(10 * np.log10(4 / top.mse))


def test_with_features_the_ranking_is_by_their_distance_not_by_pixels(traced, tmp_path):
    """A stand-in feature network that sees only the top-left 4x4 pixels ranks the layers otherwise than the pixels
    do; the ranking follows the features, and each layer's figure is its own by hand."""
    module, traced_path, _ = traced

    def corner(img):
        return check.as_nchw_float(img)[:, :, :4, :4].flatten(1)

    quantize_only = _quantize_only(module, traced_path)
    by_features = sensitivity.rank_layers(traced_path, module, LAYERS, quantize_only, 8, 3, tmp_path, corner)
    by_pixels = sensitivity.rank_layers(traced_path, module, LAYERS, quantize_only, 8, 3, tmp_path)
    assert [e.layer for e in by_features] != [e.layer for e in by_pixels]
    distances = [e.feature_distance for e in by_features]
    assert distances == sorted(distances, reverse=True) and distances[-1] > 0
    top = by_features[0]
    quantize_only([top.layer], tmp_path / "top.onnx")
    names = [spec.name for spec in module.inputs()]
    generator = torch.Generator().manual_seed(3)
    batches = [module.example_inputs(size, generator) for size in (1, 7)]
    one, float_model = onnx.OnnxRunner(tmp_path / "top.onnx", names), onnx.OnnxRunner(traced_path, names)
    squared = [(corner(one(*inputs)) - corner(float_model(*inputs))).square().sum(1) for inputs in batches]
    assert top.feature_distance == pytest.approx(torch.cat(squared).mean().item())
    assert top.mse == next(e.mse for e in by_pixels if e.layer == top.layer)


def test_keep_float_auto_keeps_the_most_sensitive_layers_and_stops_at_the_first_set_that_passes(
    traced, tmp_path, monkeypatch
):
    """The check is made to fail twice (a stand-in for the gate, whose own figures are tested elsewhere): the third
    set, the two layers at the top of the ranking in float, passes and is written; nothing more is tried."""
    module, traced_path, snapshot = traced
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures(corner=4))
    verdicts = [["FID too high"], ["FID too high"], [], []]
    judged = []

    def problems(figures, max_abs_diff, max_fid_delta):
        judged.append(figures)
        return verdicts[len(judged) - 1]

    monkeypatch.setattr(check, "problems", problems)
    out = tmp_path / "G.onnx"
    args = ["--precision", "int8", "--calib", "8", "--check", "4", "--check-fid", "4", "--keep-float", "auto"]
    result = export("--network", snapshot, "--out", out, *args, "--seed", "1")
    assert result.exit_code == 0, result.output
    assert len(judged) == 3

    def features(img):  # the check's feature network (here the stand-in): the check measures FID
        return PixelFeatures(corner=4)(check.as_nchw_uint8(img)).double()

    quantize_only = _quantize_only(module, traced_path, seed=2)  # the export's calibration: --seed 1, plus 1
    count = sensitivity.SENSITIVITY_LATENTS
    ranking = sensitivity.rank_layers(traced_path, module, LAYERS, quantize_only, count, 3, tmp_path, features)
    by_pixels = sensitivity.rank_layers(traced_path, module, LAYERS, quantize_only, count, 3, tmp_path)
    assert [e.layer for e in ranking[:2]] != [e.layer for e in by_pixels[:2]]  # so the test tells them apart
    kept = [effect.layer for effect in ranking[:2]]
    card = json.loads((tmp_path / "G.onnx.json").read_text())
    settings = card["quantization"]
    assert settings["keep_float"] == "auto" and settings["float_layers"] == [x for x in LAYERS if x in kept]
    assert card["quantized_layers"] == [layer for layer in LAYERS if layer not in kept]
    auto = settings["auto"]
    assert [entry["layer"] for entry in auto["ranking"]] == [effect.layer for effect in ranking]
    assert [entry["float_layers"] for entry in auto["rejected"]] == [[], kept[:1]]
    assert [entry["psnr_db"] for entry in auto["rejected"]] == [f.psnr_db for f in judged[:2]]
    stages = [line for line in result.stdout.splitlines() if line.startswith("export: int8 with ")]
    assert stages[0] == f"export: int8 with {kept[0]} in float (the layers that change the image most): started"


def test_keep_float_auto_tries_one_more_layer_after_each_failure_and_stops_with_one_layer_left(traced, tmp_path):
    module, traced_path, snapshot = traced
    options = ExportOptions.parse(network=snapshot, out=tmp_path / "G.onnx", precision="int8", calib=8,
                                  keep_float="auto", seed=1)  # fmt: skip
    figures = check.Figures(4, 0.1, 0.01, 30.0, 4, 5.0, 0.01, (1, 3), "test")
    float_layers = sensitivity.FloatLayers(module, options, traced_path, LAYERS, tmp_path)
    tried = []
    for kept in float_layers:
        tried.append(list(kept))
        if not float_layers.record(figures):
            break
    ranked = [entry["layer"] for entry in float_layers.card()["auto"]["ranking"]]
    assert tried == [ranked[:k] for k in range(len(LAYERS))]  # none in float, then 1, 2, 3, 4: one left in int8
    assert "with all but one layer in float the check still fails; use --precision fp16" in float_layers.hint()
    # Without auto there is one set, the one the options name, and nothing to hint or add to the card.
    plain = sensitivity.FloatLayers(module, dataclasses.replace(options, keep_float_auto=False), traced_path, LAYERS,
                                    tmp_path)  # fmt: skip
    assert [list(kept) for kept in plain] == [[]] and plain.hint() is None and plain.card() == {}
    assert not plain.record(figures)


def _scales(path) -> tuple[list, list]:
    """(the weights' scales, the activations' scales) of a QDQ model: per-channel weight scales are vectors."""
    import onnx as onnx_lib
    from onnx import numpy_helper

    graph = onnx_lib.load(str(path)).graph
    initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    dequantized = [n for n in graph.node if n.op_type == "DequantizeLinear" and n.input[0] in initializers]
    weight_scales = [initializers[n.input[1]] for n in dequantized]
    activation_scales = [initializers[n.input[1]] for n in graph.node if n.op_type == "QuantizeLinear"]
    return weight_scales, activation_scales


def test_weight_scales_and_calibration_method_reach_the_quantizer_and_the_card(traced, tmp_path):
    module, traced_path, snapshot = traced
    settings, scales = {}, {}
    for flags in (("per-channel", "minmax"), ("per-channel", "percentile"), ("per-tensor", "entropy")):
        options = ExportOptions.parse(network=snapshot, out=tmp_path / "G.onnx", precision="int8", calib=8,
                                      int8_weights=flags[0], calib_method=flags[1])  # fmt: skip
        path = tmp_path / f"{flags[1]}.onnx"
        settings[flags] = quantize.quantize_int8(traced_path, path, module, LAYERS, **options.int8_settings())
        scales[flags] = _scales(path)
    methods = [recorded["calibration"]["method"] for recorded in settings.values()]
    assert methods == ["MinMax", "Percentile", "Entropy"]
    assert [recorded["weights"]["per_channel"] for recorded in settings.values()] == [True, True, False]
    # In the graphs: one weight scale per output channel, or one per layer; the calibration method sets the
    # activations' ranges (a percentile inside the extremes), not the weights'.
    (minmax_w, minmax_a), (percentile_w, percentile_a), (tensor_w, _) = scales.values()
    assert len(minmax_w) == len(tensor_w) == len(LAYERS)
    assert all(s.ndim == 1 and s.size > 1 for s in minmax_w) and all(s.ndim == 0 for s in tensor_w)
    assert all(np.array_equal(a, b) for a, b in zip(minmax_w, percentile_w, strict=True))
    assert all(p <= m for p, m in zip(percentile_a, minmax_a, strict=True)) and percentile_a != minmax_a
    assert any(p < m for p, m in zip(percentile_a, minmax_a, strict=True))
