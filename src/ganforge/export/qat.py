"""Quantization-aware fine-tuning before an int8 export (`export --qat-kimg`): the generator is fine-tuned with the
export's int8 rounding simulated in its forward, so that its weights and the activations' ranges learn to absorb it;
the export then quantizes the fine-tuned generator with the learned ranges.

What is simulated is what the onnxruntime quantizer of export/quantize.py does to each convolution it quantizes:
- the convolution's input and its output as uint8, one affine range (scale, zero point) per tensor. The ranges start
  as the quantizer's MinMax calibration sets them (the extremes seen on the same calibration latents, torch.ao's
  MinMaxObserver) and are then learned with the weights (LSQ: Esser et al. 2020, "Learned Step Size Quantization",
  Eq. 3-5, with a learned offset as in LSQ+: Bhalgat et al. 2020); the export hands the learned ranges to the
  quantizer in place of its own calibration's;
- its weight as symmetric int8 in [-127, 127] with the scale max|w| / 127, per output channel or per tensor,
  recomputed from the current weight at every step as the quantizer computes it from the final one.
Gradients pass straight through the rounding and are zero outside the range (the straight-through estimator; Jacob
et al. 2018, "Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference", Sec. 3).

The convolutions are found as the quantizer finds them in the graph (export/quantize.py, nodes_to_quantize): a
single-group convolution called by one of the quantized layers itself, not the depthwise resampling filters around
it. A TorchFunctionMode sees each convolution a layer calls, so the networks' code is the same with and without QAT.

The loss is distillation: the mean squared pixel difference from the float generator's image of the same input. The
check an export must pass measures how far the exported images are from the float generator's, so that is the
objective. A discriminator's loss would pull the generator towards the data, which the check counts as a difference
as much as rounding, and needs the run's checkpoint and dataset, which a snapshot alone does not have.

It runs on the CPU, where the export traces: there both generator families run the shared-weight convolution the
graph has (on a GPU a batch runs as one grouped convolution, which the quantizer would not see).
"""

import contextlib
import copy
import math
import time
from collections.abc import Iterable

import numpy as np
import torch
from torch import nn
from torch.ao.quantization import MinMaxObserver
from torch.overrides import TorchFunctionMode

from ganforge.export import quantize
from ganforge.export.wrapper import DeployableGenerator
from ganforge.progress import Stage

QAT_BATCH = 16
# Adam with momentum (the rounding makes each batch's gradient noisy); the weights at a twenty-fifth of the
# generator's training rate, since they start where they should end, the ranges at ten times that, since a range
# moves by whole quantization steps. Chosen on the digits generator by the simulated int8 pixel MSE after 2 kimg
# (8.2e-4 before): weights at 1e-4 or 3e-5 gave 5.8e-4, at 1e-3 (frozen ranges, no momentum) 3.6e-3; ranges at 1e-2
# 6.6e-4; 8 kimg no better than 2.
QAT_LEARNING_RATES = {"weights": 1e-4, "ranges": 1e-3}
QAT_BETAS = (0.9, 0.99)
# Peak memory of a fine-tuning step per image, in units of the generator's forward peak for one image (what
# generate.budget.synthesis_peak_bytes measures): the activations kept for the backward pass, the rounding's
# intermediates and the gradients. Measured 8.4 (a batch of 4) and 9.3 (1) on a 64 px generator.
TRAINING_PEAK_PER_IMAGE = 10
QAT_EVAL_LATENTS = 64  # fixed inputs on which the simulated int8 error is measured before and after the fine-tuning
UINT8_LEVELS = (0, 255)  # the activations' integers, as the quantizer's QUInt8
INT8_WEIGHT_LEVEL = 127  # symmetric int8 weights use [-127, 127], as the quantizer does
# The quantized convolutions, by the axis of their weight's output channels: [O, I, k, k], and [I, O, k, k] transposed.
CONVOLUTIONS = {torch.conv2d: 0, torch.conv_transpose2d: 1}
LOSS = "mean squared pixel difference from the float generator's image of the same input (distillation)"


def round_weight(weight: torch.Tensor, axis: int, per_channel: bool) -> torch.Tensor:
    """The weight as the quantizer stores it, back in float: symmetric int8, scale max|w| / 127 per output channel
    (`axis`) or for the whole tensor; straight-through gradient."""
    dims = [d for d in range(weight.ndim) if d != axis] if per_channel else list(range(weight.ndim))
    scale = weight.detach().abs().amax(dim=dims).clamp_min(torch.finfo(torch.float32).tiny) / INT8_WEIGHT_LEVEL
    zero = torch.zeros(scale.shape, dtype=torch.int32)
    if per_channel:
        return torch.fake_quantize_per_channel_affine(weight, scale, zero, axis, -INT8_WEIGHT_LEVEL, INT8_WEIGHT_LEVEL)
    return torch.fake_quantize_per_tensor_affine(weight, scale, zero, -INT8_WEIGHT_LEVEL, INT8_WEIGHT_LEVEL)


def _rounded(x: torch.Tensor) -> torch.Tensor:
    """Round to nearest, ties to even (as ONNX QuantizeLinear), with a straight-through gradient; x - x.detach() is
    exactly 0, so the value is exactly the rounded one."""
    return torch.round(x).detach() + (x - x.detach())


class ActivationRange(nn.Module):
    """One activation tensor as uint8 with a learned affine range: x -> (clamp(round(x / scale) + zero) - zero) *
    scale, the scale and zero point learned through the straight-through rounding (LSQ Eq. 3-5; the zero point
    rounded to an integer as stored). It starts from the extremes `observe` has seen (`start_from_observed`)."""

    def __init__(self):
        super().__init__()
        low, high = UINT8_LEVELS
        self.observer = MinMaxObserver(dtype=torch.quint8, quant_min=low, quant_max=high)
        self.scale = nn.Parameter(torch.ones([]))
        self.zero_point = nn.Parameter(torch.zeros([]))

    def observe(self, x: torch.Tensor) -> torch.Tensor:
        self.observer(x.detach())
        return x

    def start_from_observed(self) -> None:
        """The range from the extremes observed, as the MinMax calibrator sets it."""
        scale, zero = self.observer.calculate_qparams()
        with torch.no_grad():
            self.scale.copy_(scale.reshape([]))
            self.zero_point.copy_(zero.reshape([]).to(torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low, high = UINT8_LEVELS
        # LSQ's gradient scale, 1 / sqrt(elements x levels), so the range's steps match the weights' in size
        grad_scale = 1 / math.sqrt(x[0].numel() * high)
        scaled = self.scale * grad_scale
        scale = self.scale.detach() + (scaled - scaled.detach())  # the value exactly, the gradient scaled
        zero = _rounded(self.zero_point.clamp(low, high))
        return (_rounded(x / scale + zero).clamp(low, high) - zero) * scale

    def quantizer_override(self) -> dict:
        """The range as onnxruntime's quantizer takes it for a tensor (TensorQuantOverrides): scale and zero point."""
        low, high = UINT8_LEVELS
        zero = int(torch.round(self.zero_point.detach().clamp(low, high)))
        return {"scale": np.array(self.scale.item(), np.float32), "zero_point": np.array(zero, np.uint8)}


MODES = ("observe", "round", "off")  # the float convolution seen by the ranges; simulated int8; the float one alone


class SimulatedConv(nn.Module):
    """One layer's quantized convolution: observed (its input and output ranges), simulated (input, weight and
    output rounded as the quantizer does), or untouched."""

    def __init__(self, per_channel: bool):
        super().__init__()
        self.per_channel, self.mode = per_channel, "observe"
        self.input, self.output = ActivationRange(), ActivationRange()

    def forward(self, conv, x: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        if self.mode == "observe":
            return self.output.observe(conv(self.input.observe(x), weight, *args, **kwargs))
        if self.mode == "round":
            weight = round_weight(weight, CONVOLUTIONS[conv], self.per_channel)
            return self.output(conv(self.input(x), weight, *args, **kwargs))
        return conv(x, weight, *args, **kwargs)


class _LayerConvolutions(TorchFunctionMode):
    """Sends the single-group convolutions that a simulated layer calls (the innermost one running) to its
    SimulatedConv; every other call as it was."""

    def __init__(self):
        super().__init__()
        self.running: list[SimulatedConv] = []

    def enter(self, conv: SimulatedConv) -> None:  # a forward hook's return value would replace the layer's
        self.running.append(conv)

    def leave(self) -> None:
        self.running.pop()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
        if func in CONVOLUTIONS and self.running and groups == 1:
            return self.running[-1](func, *args, **kwargs)
        return func(*args, **kwargs)


class Simulation:
    """The int8 rounding of `layers` (module paths of generator G, as quantize.quantizable_layers names them),
    applied inside `applied()`: first observing, until `calibrate` has set the ranges; then rounding."""

    def __init__(self, G: nn.Module, layers: list[str], per_channel: bool):
        self.G = G
        self.convs = {name: SimulatedConv(per_channel) for name in layers}

    def set_mode(self, mode: str) -> None:
        assert mode in MODES, mode
        for conv in self.convs.values():
            conv.mode = mode

    def range_parameters(self) -> list[nn.Parameter]:
        return [p for conv in self.convs.values() for p in conv.parameters()]

    @contextlib.contextmanager
    def applied(self):
        mode, handles = _LayerConvolutions(), []
        for name, conv in self.convs.items():
            layer = self.G.get_submodule(name)
            handles.append(layer.register_forward_pre_hook(lambda *_, conv=conv: mode.enter(conv)))
            handles.append(layer.register_forward_hook(lambda *_: mode.leave()))
        try:
            with mode:
                yield
        finally:
            for handle in handles:
                handle.remove()

    def calibrate(self, module: DeployableGenerator, batches: Iterable[tuple[torch.Tensor, ...]]) -> None:
        """Observe the activations' extremes in the float model on `batches` of its inputs, start the ranges there,
        and round from now on."""
        self.set_mode("observe")
        with torch.no_grad(), self.applied():
            for inputs in batches:
                module(*inputs)
        for conv in self.convs.values():
            conv.input.start_from_observed()
            conv.output.start_from_observed()
        self.set_mode("round")

    def ranges(self) -> dict[str, tuple[dict, dict]]:
        """Each layer's learned (input, output) ranges, as the quantizer takes them (export/quantize.py)."""
        return {
            name: (conv.input.quantizer_override(), conv.output.quantizer_override())
            for name, conv in self.convs.items()
        }


def fine_tune(
    student: DeployableGenerator,
    teacher: DeployableGenerator,
    simulation: Simulation | None,
    images: int,
    seed: int,
    show: bool = True,
) -> dict:
    """Fine-tune the student's generator (and the ranges of `simulation`, applied; None: plain float fine-tuning)
    on `images` generated inputs drawn with `seed`, towards the teacher's images (LOSS); both output float images.
    Returns what the card records: the budget, the optimizer, and the pixel MSE from the teacher on QAT_EVAL_LATENTS
    fixed inputs before and after."""
    generator = torch.Generator().manual_seed(seed)
    held_out = student.example_inputs(QAT_EVAL_LATENTS, generator)
    with torch.no_grad():
        target = teacher(*held_out)
    weights = list(student.G.parameters())
    ranges = simulation.range_parameters() if simulation is not None else []
    groups = [{"params": weights, "lr": QAT_LEARNING_RATES["weights"]}]
    groups += [{"params": ranges, "lr": QAT_LEARNING_RATES["ranges"]}] if ranges else []
    optimizer = torch.optim.Adam(groups, betas=QAT_BETAS)
    began = time.monotonic()
    with simulation.applied() if simulation is not None else contextlib.nullcontext():
        before = _mse(student, held_out, target)
        with _trainable(weights + ranges), Stage(f"export: QAT fine-tuning on {images} images", images,
                                                 enabled=show) as stage:  # fmt: skip
            for start in range(0, images, QAT_BATCH):
                inputs = student.example_inputs(min(QAT_BATCH, images - start), generator)
                with torch.no_grad():
                    want = teacher(*inputs)
                loss = (student(*inputs) - want).square().mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                stage.update(len(inputs[0]))
        after = _mse(student, held_out, target)
    return {
        "images": images,
        "batch": QAT_BATCH,
        "seed": seed,
        "loss": LOSS,
        "optimizer": {"name": "Adam", "lr": QAT_LEARNING_RATES, "betas": list(QAT_BETAS)},
        "trained": "every generator parameter, and the activation ranges of the int8 convolutions",
        "mse_before": before,
        "mse_after": after,
        "mse_latents": QAT_EVAL_LATENTS,
        "seconds": round(time.monotonic() - began, 1),
    }


@contextlib.contextmanager
def _trainable(parameters: list[nn.Parameter]):
    for p in parameters:
        p.requires_grad_(True)
    try:
        yield
    finally:
        for p in parameters:
            p.requires_grad_(False)


def _mse(module: DeployableGenerator, inputs: tuple[torch.Tensor, ...], target: torch.Tensor) -> float:
    with torch.no_grad():
        return (module(*inputs).double() - target.double()).square().mean().item()


def quantization_aware(
    module: DeployableGenerator, layers: list[str], images: int, calibration: dict, seed: int, show: bool = True
) -> tuple[DeployableGenerator, dict, dict]:
    """A copy of `module` whose generator was fine-tuned with the int8 rounding of `layers` simulated, its ranges
    starting from the export's own calibration (`calibration`: quantize_int8's keywords that shape it), on `images`
    inputs drawn with `seed`. Returns it, the learned ranges for quantize_int8, and the card's record."""
    teacher = module.around(module.G, uint8=False)
    student = module.around(copy.deepcopy(module.G).cpu(), uint8=False)
    simulation = Simulation(student.G, layers, calibration["per_channel"])
    with Stage(f"export: QAT calibration on {calibration['calib']} latents", enabled=show):
        simulation.calibrate(student, quantize.calibration_inputs(student, calibration["calib"], calibration["seed"]))
    record = fine_tune(student, teacher, simulation, images, seed, show)
    record["rounding"] = (
        "simulated in PyTorch as the quantizer applies it: uint8 convolution inputs and outputs, their ranges "
        "started from the calibration's extremes and learned (LSQ); symmetric int8 weights, scale max|w|/127"
    )
    return module.around(student.G), simulation.ranges(), record
