"""Static post-training int8 quantization of an exported ONNX generator with onnxruntime's quantizer (QDQ format).

What is quantized: the convolutions of the synthesis layers. Their weight is a static parameter, because the
modulated convolution is run as "scale the activations by the style, convolve with the shared weight, scale the
output by the demodulation factor" (StyleGAN2 Eq. 1-3 regrouped), so per-channel int8 weights and calibrated uint8
activations apply to them as to any CNN. What stays in float: the mapping network (every style depends on it), the
style affines and demodulation (per-sample scale factors, a small share of the work), the toRGB layers (their
output is the image itself), and the fixed FIR/low-pass filters (depthwise, cheap, and exact only in float).
"""

from pathlib import Path

import torch

from ganforge.export.onnx import scopes
from ganforge.export.quiet import quiet_exporter
from ganforge.export.wrapper import DeployableGenerator
from ganforge.nets import generator, stylegan3_layers

CALIBRATION_BATCH = 16
QUANTIZED_OPS = ("Conv", "ConvTranspose")
FLOAT_PARTS = "mapping network, style affines and demodulation, toRGB layers, FIR resampling filters"
METHOD = "onnxruntime static quantization, QDQ, MinMax calibration, int8 per-channel weights, uint8 activations"


def quantizable_layers(module: DeployableGenerator) -> list[str]:
    """Module paths in the generator (synthesis.b8.conv0, ...) of the layers with a quantizable convolution."""
    stylegan3 = stylegan3_layers.SynthesisLayer
    return [
        name
        for name, layer in module.G.named_modules()
        if isinstance(layer, generator.SynthesisLayer) or (isinstance(layer, stylegan3) and not layer.is_torgb)
    ]


def nodes_to_quantize(path: Path, layers: list[str]) -> list[str]:
    """The modulated convolutions of `layers` in the ONNX graph: Conv/ConvTranspose nodes made directly by one of
    them with a single group (the resampling filters inside the same layers are depthwise, one group per channel)."""
    import onnx

    wanted, found = {f"G.{layer}" for layer in layers}, []  # the exporter names modules from the wrapper down
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        groups = next((attr.i for attr in node.attribute if attr.name == "group"), 1)
        node_scopes = scopes(node)
        if node.op_type in QUANTIZED_OPS and groups == 1 and node_scopes and node_scopes[-1] in wanted:
            found.append(node.name)
    return found


class _Calibration:
    """onnxruntime's CalibrationDataReader protocol: feeds of `count` generated inputs, CALIBRATION_BATCH at a time
    (or the fixed batch the model was exported with)."""

    def __init__(self, module: DeployableGenerator, count: int, seed: int):
        self.module, self.remaining = module, count
        self.batch = CALIBRATION_BATCH if module.batch == "batch" else module.batch
        self.generator = torch.Generator().manual_seed(seed)

    def get_next(self) -> dict | None:
        if self.remaining <= 0:
            return None
        size = self.batch if self.module.batch != "batch" else min(self.batch, self.remaining)
        self.remaining -= size
        inputs = self.module.example_inputs(size, self.generator)
        return {spec.name: x.numpy() for spec, x in zip(self.module.inputs(), inputs, strict=True)}


def quantize_int8(src: Path, dst: Path, module: DeployableGenerator, layers: list[str], calib: int, seed: int):
    """Write to `dst` the float ONNX model `src` with the convolutions of `layers` (see quantizable_layers) in int8,
    calibrated on the activations of `calib` generated inputs drawn with `seed`."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    nodes = nodes_to_quantize(src, layers)
    assert nodes, f"no quantizable convolution found for {layers}"
    with quiet_exporter():
        quantize_static(
            str(src),
            str(dst),
            _Calibration(module, calib, seed),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=list(QUANTIZED_OPS),
            nodes_to_quantize=nodes,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
        )
