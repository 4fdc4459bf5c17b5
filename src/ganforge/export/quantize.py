"""Static post-training int8 quantization of an exported ONNX generator with onnxruntime's quantizer (QDQ format).

What is quantized: the convolutions of the synthesis layers. Their weight is a static parameter, because the
modulated convolution is run as "scale the activations by the style, convolve with the shared weight, scale the
output by the demodulation factor" (StyleGAN2 Eq. 1-3 regrouped), so per-channel int8 weights and calibrated uint8
activations apply to them as to any CNN. What stays in float: the mapping network (every style depends on it), the
style affines and demodulation (per-sample scale factors, a small share of the work), the toRGB layers (their
output is the image itself), and the fixed FIR/low-pass filters (depthwise, cheap, and exact only in float).
"""

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from ganforge.export.onnx import scopes
from ganforge.export.quiet import quiet_exporter
from ganforge.export.wrapper import DeployableGenerator
from ganforge.nets import generator, stylegan3_layers
from ganforge.progress import Stage

CALIBRATION_BATCH = 16
QUANTIZED_OPS = ("Conv", "ConvTranspose")
FLOAT_PARTS = "mapping network, style affines and demodulation, toRGB layers, FIR resampling filters"
# The quantizer's settings, passed to it as written here and recorded on the card from here. The weights are
# symmetric int8, by default with one scale per output channel (a layer's channels differ in range by orders of
# magnitude); the activations asymmetric uint8 with one scale per tensor, their range found by the calibration method.
QUANT_FORMAT = "QDQ"
WEIGHT_TYPE = {"type": "QInt8", "symmetric": True}
ACTIVATIONS = {"type": "QUInt8", "per_channel": False, "symmetric": False}
SYMMETRY = {"WeightSymmetric": WEIGHT_TYPE["symmetric"], "ActivationSymmetric": ACTIVATIONS["symmetric"]}
# --calib-method: onnxruntime's calibrators. minmax: the extremes seen; percentile: the range holding all but the
# outermost 0.001% of values (a histogram per tensor); entropy: the range whose quantized histogram loses the least
# information (KL divergence, as TensorRT's calibrator).
CALIBRATORS = {"minmax": "MinMax", "percentile": "Percentile", "entropy": "Entropy"}
CALIBRATION_SOURCE = (
    "inputs of the exported model drawn from a torch.Generator seeded with `seed`, as the check draws its own: "
    "z ~ N(0, I), uniformly random one-hot classes for a conditional network, N(0, I) maps for noise inputs"
)


def quantizable_layers(module: DeployableGenerator) -> list[str]:
    """Module paths in the generator (synthesis.b8.conv0, ...) of the layers with a quantizable convolution."""
    stylegan3 = stylegan3_layers.SynthesisLayer
    return [
        name
        for name, layer in module.G.named_modules()
        if isinstance(layer, generator.SynthesisLayer) or (isinstance(layer, stylegan3) and not layer.is_torgb)
    ]


def nodes_to_quantize(path: Path, layers: list[str]) -> dict:
    """The modulated convolutions of `layers` in the ONNX graph, by layer: the Conv/ConvTranspose node (an
    onnx.NodeProto) made directly by each with a single group (the resampling filters inside the same layers are
    depthwise, one group per channel)."""
    import onnx

    wanted, found = {f"G.{layer}": layer for layer in layers}, {}  # the exporter names modules from the wrapper down
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        groups = next((attr.i for attr in node.attribute if attr.name == "group"), 1)
        node_scopes = scopes(node)
        if node.op_type in QUANTIZED_OPS and groups == 1 and node_scopes and node_scopes[-1] in wanted:
            found[wanted[node_scopes[-1]]] = node
    return found


def calibration_draw(module: DeployableGenerator, count: int) -> tuple[int, int]:
    """(batch, latents drawn) of a calibration on `count` latents: CALIBRATION_BATCH at a time, or whole batches of a
    fixed-batch model (the count rounded up)."""
    if module.batch == "batch":
        return CALIBRATION_BATCH, count
    return module.batch, -(-count // module.batch) * module.batch


def calibration_inputs(module: DeployableGenerator, count: int, seed: int) -> Iterator[tuple[torch.Tensor, ...]]:
    """The calibration's batches of generated inputs, drawn with `seed` (see calibration_draw). The
    quantization-aware fine-tuning observes its ranges on the same inputs (export/qat.py)."""
    generator = torch.Generator().manual_seed(seed)
    batch, drawn = calibration_draw(module, count)
    for start in range(0, drawn, batch):
        yield module.example_inputs(min(batch, drawn - start), generator)


class _Calibration:
    """onnxruntime's CalibrationDataReader protocol: feeds of the calibration's inputs (`calibration_inputs`), shown
    as two stages: the calibration, counted as onnxruntime asks for each batch (asking for one means the one before
    has run), then the quantization, from the moment the last batch has run until the model is written."""

    def __init__(self, module: DeployableGenerator, count: int, seed: int, nodes: int, show: bool):
        self.nodes, self.show = nodes, show
        self.stdout = sys.stdout  # the user's, for the stage that starts while the quantizer's own prints are muted
        self.batch, self.drawn = calibration_draw(module, count)
        self.names = [spec.name for spec in module.inputs()]
        self.batches = calibration_inputs(module, count, seed)
        self.running = 0  # inputs handed out whose batch onnxruntime is running
        self.calibrating = True
        self.stage = Stage(f"export: int8 calibration on {self.drawn} latents", self.drawn, "latent", enabled=show)

    def get_next(self) -> dict | None:
        self.stage.update(self.running)
        inputs = next(self.batches, None)
        self.running = 0 if inputs is None else len(inputs[0])
        if inputs is None:
            if self.calibrating:  # the last batch has run: the quantization starts
                self.calibrating = False
                self.stage.close()
                with contextlib.redirect_stdout(self.stdout):
                    self.stage = Stage(f"export: int8 quantization of {self.nodes} convolutions", enabled=self.show)
            return None
        return {name: x.numpy() for name, x in zip(self.names, inputs, strict=True)}

    def __enter__(self) -> "_Calibration":
        return self

    def __exit__(self, kind, error, trace) -> None:
        self.stage.close(failed=kind is not None)


def quantize_int8(
    src: Path,
    dst: Path,
    module: DeployableGenerator,
    layers: list[str],
    calib: int,
    seed: int,
    per_channel: bool = True,
    method: str = "minmax",
    *,
    ranges: dict[str, tuple[dict, dict]] | None = None,
    show: bool = True,
) -> dict:
    """Write to `dst` the float ONNX model `src` with the convolutions of `layers` (see quantizable_layers) in int8
    (weights with a scale per output channel, or one per tensor), calibrated by `method` (a CALIBRATORS key) on the
    activations of `calib` generated inputs drawn with `seed`, shown as two stages unless not `show`; `ranges`
    (from the quantization-aware fine-tuning, export/qat.py) replaces the calibration's range of each layer's
    convolution input and output by the (scale, zero point) learned for it. Returns the
    settings that shaped the result, for the card: the quantizer and its scheme, the calibration, the quantizable
    layers kept in float."""
    import onnxruntime
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    nodes = nodes_to_quantize(src, layers)
    assert nodes, f"no quantizable convolution found for {layers}"
    overrides = {}
    for layer, (input_range, output_range) in (ranges or {}).items():
        overrides |= {nodes[layer].input[0]: [input_range], nodes[layer].output[0]: [output_range]}
    calibration = _Calibration(module, calib, seed, len(nodes), show)
    # the histogram calibrators print their progress: muted, as the exporters' chatter
    with quiet_exporter(), calibration, contextlib.redirect_stdout(io.StringIO()):
        quantize_static(
            str(src),
            str(dst),
            calibration,
            quant_format=QuantFormat[QUANT_FORMAT],
            op_types_to_quantize=list(QUANTIZED_OPS),
            nodes_to_quantize=[node.name for node in nodes.values()],
            per_channel=per_channel,
            activation_type=QuantType[ACTIVATIONS["type"]],
            weight_type=QuantType[WEIGHT_TYPE["type"]],
            calibrate_method=CalibrationMethod[CALIBRATORS[method]],
            extra_options=SYMMETRY | ({"TensorQuantOverrides": overrides} if overrides else {}),
        )
    sampled = {"latents": calib, "drawn": calibration.drawn, "batch": calibration.batch, "seed": seed}
    return {
        "tool": f"onnxruntime {onnxruntime.__version__} quantize_static",
        "format": QUANT_FORMAT,
        "op_types": list(QUANTIZED_OPS),
        "weights": WEIGHT_TYPE | {"per_channel": per_channel},
        "activations": ACTIVATIONS,
        "calibration": {"method": CALIBRATORS[method]} | sampled | {"source": CALIBRATION_SOURCE},
        "activation_ranges": "learned by the fine-tuning (qat)" if ranges else "the calibration's",
        "float_layers": [layer for layer in quantizable_layers(module) if layer not in layers],
        "quantized_nodes": len(nodes),
    }
