"""Building blocks shared by the StyleGAN2 generator and discriminator.

Equalized learning rate (Karras et al. 2018, "Progressive Growing of GANs", Sec. 4.1): weights are stored with unit
variance and scaled by He's constant at every use, so Adam's per-parameter step is the same for every layer.
Modulated convolution and demodulation follow Karras et al. 2020 ("Analyzing and Improving the Image Quality of
StyleGAN", Eq. 1-3). Resampling uses the [1, 3, 3, 1] FIR filter of Zhang 2019 ("Making Convolutional Networks
Shift-Invariant Again"), applied as the official implementation does, so imported weights give the same images.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from ganforge.errors import UserError
from ganforge.limits import (
    ARCHITECTURES,
    BLOCK_RESOLUTIONS,
    RESOLUTIONS,
    aspect_problem,
    block_resolutions_ok,
    resolution_ok,
    stage_problem,
)
from ganforge.nets import winograd
from ganforge.nets.filtered_lrelu import filtered_lrelu
from ganforge.nets.ops import LRELU_GAIN, LRELU_SLOPE, FusedOps

FIR_TAPS = (1.0, 3.0, 3.0, 1.0)
RESIDUAL_GAIN = math.sqrt(0.5)  # (skip + residual) * sqrt(1/2) keeps the variance (StyleGAN2 App. B)


# --- architecture helpers -------------------------------------------------------------------------------------------


def fp16_min_resolution(resolution: int, num_fp16_res: int) -> int:
    """Lowest resolution that runs in fp16 when the top `num_fp16_res` resolutions do (never below 8x8)."""
    return max(2 ** (int(math.log2(resolution)) + 1 - num_fp16_res), 8)


def block_dtype(use_fp16: bool, force_fp32: bool, device: torch.device) -> torch.dtype:
    """fp16 only on CUDA: CPU fp16 convolutions are slow and imprecise, so there the whole net stays fp32."""
    return torch.float16 if use_fp16 and not force_fp32 and device.type == "cuda" else torch.float32


def aspect_config(aspect) -> dict:
    """The recorded argument of a valid `aspect`: {"aspect": [rows, cols]} (JSON has no tuples) for a non-square
    network, {} for a square one, whose recorded arguments (and so its snapshots) stay as before aspect existed."""
    return {} if tuple(aspect) == (1, 1) else {"aspect": [int(f) for f in aspect]}


def check_arch(**kwargs) -> None:
    """Raise one UserError listing every invalid architecture argument (positive ints, power-of-two resolution)."""
    problems = []
    res = kwargs.pop("resolution")
    if not resolution_ok(res):
        problems.append(f"resolution: {res!r} is not {RESOLUTIONS}; resize the dataset")
    aspect = aspect_problem(kwargs.pop("aspect", (1, 1)), res)
    problems += [aspect] if aspect else []
    progressive = kwargs.pop("progressive", False)
    if type(progressive) is not bool:
        problems.append(f"progressive: {progressive!r} must be true or false")
    stage = stage_problem(kwargs.pop("stage", None), res, progressive is True)
    problems += [stage] if stage else []
    minimum = {"c_dim": 0, "num_fp16_res": 0}
    for name, value in kwargs.items():
        if name == "architecture":
            if value not in ARCHITECTURES:
                problems.append(f"architecture: {value!r} is not one of {', '.join(ARCHITECTURES)}")
        elif name == "attention":
            if not block_resolutions_ok(value, res):
                problems.append(f"attention: {value!r} {BLOCK_RESOLUTIONS}")
        elif name == "conv_clamp":
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                problems.append(f"conv_clamp: {value!r} must be a positive number or None (no clamping)")
        elif not isinstance(value, int) or value < minimum.get(name, 1):
            problems.append(f"{name}: {value!r} must be an integer >= {minimum.get(name, 1)}")
    if not problems and kwargs["channel_base"] < res:
        problems.append(f"channel_base: {kwargs['channel_base']} gives no channels at {res}px; use >= {res}")
    if problems:
        raise UserError(*problems)


# --- elementwise helpers --------------------------------------------------------------------------------------------


def normalize_2nd_moment(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Scale each row to unit mean square (StyleGAN's "pixel norm" of z and of the class embedding)."""
    return x * (x.square().mean(dim=1, keepdim=True) + eps).rsqrt()


def bias_act(x: torch.Tensor, b: torch.Tensor | None, act: str, gain: float, clamp: float | None) -> torch.Tensor:
    """Add a per-channel bias, apply the activation ("lrelu" or "linear"), multiply by gain, clamp to +-clamp.

    The clamp keeps fp16 activations finite (official conv_clamp=256); it is applied after the gain, as upstream.
    """
    if b is not None:
        x = x + b.to(x.dtype).reshape(1, -1, *([1] * (x.ndim - 2)))
    if act == "lrelu":
        x = F.leaky_relu(x, LRELU_SLOPE)
    else:
        assert act == "linear", act
    if gain != 1:
        x = x * gain
    if clamp is not None:
        x = x.clamp(-clamp, clamp)
    return x


# --- FIR resampling -------------------------------------------------------------------------------------------------


def fir_kernel() -> torch.Tensor:
    """The normalized separable 4x4 FIR kernel: outer([1,3,3,1], [1,3,3,1]) / 64, summing to 1."""
    f = torch.tensor(FIR_TAPS, dtype=torch.float32)
    f = torch.outer(f, f)
    return f / f.sum()


class _DepthwiseFIR(torch.autograd.Function):
    """A fixed filter applied to every channel: a grouped convolution (groups = channels) or its transpose.

    The derivative of this linear map is its adjoint, which is the same Function with `transpose` flipped, so every
    order of derivative (R1 and path length need the second) costs one depthwise convolution. Autograd's generic
    double backward of a grouped convolution computes the filter's gradient too, one group at a time, even for a
    constant filter: that alone was about 40% of an R1 step.
    Folding channels into the batch and running a 1->1 convolution gives the same numbers but is ~20x slower on CPU.
    """

    @staticmethod
    def forward(ctx, x, f, transpose: bool, stride: int, padding: int, out_size):
        ctx.f, ctx.transpose, ctx.stride, ctx.padding, ctx.in_size = f, transpose, stride, padding, x.shape[2:]
        c = x.shape[1]
        weight = f.to(x.dtype)[None, None].expand(c, 1, *f.shape)  # [C, 1, k, k] for conv and its transpose
        if not transpose:
            return F.conv2d(x, weight, stride=stride, padding=padding, groups=c)
        # output_padding picks, among the sizes a strided convolution maps to the same size, the one asked for
        sizes = zip(x.shape[2:], out_size, f.shape, strict=True)
        extra = [o - ((i - 1) * stride - 2 * padding + k) for i, o, k in sizes]
        return F.conv_transpose2d(x, weight, stride=stride, padding=padding, output_padding=extra, groups=c)

    @staticmethod
    def backward(ctx, grad):
        adjoint = _DepthwiseFIR.apply(grad, ctx.f, not ctx.transpose, ctx.stride, ctx.padding, ctx.in_size)
        return adjoint, None, None, None, None, None


def fir_filter(x: torch.Tensor, f: torch.Tensor, pad: int, gain: float = 1.0) -> torch.Tensor:
    """Pad by `pad` on every side and convolve with f * gain (f is symmetric, so correlation == convolution)."""
    return _DepthwiseFIR.apply(x, f * gain, False, 1, pad, None)


def upsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """2x FIR upsampling: zero insertion, then the filter with gain 4 (so a constant image keeps its value).

    A transposed convolution with stride 2 is exactly zero insertion followed by full convolution; cropping one
    sample on each side (padding=1) aligns the result with upfirdn2d(up=2, pad=[2, 1]) of the reference.
    """
    return _DepthwiseFIR.apply(x, f * 4, True, 2, 1, [2 * s for s in x.shape[2:]])


def downsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """2x FIR downsampling: pad 1 on each side, filter, keep every second sample (upfirdn2d(down=2, pad=[1, 1]))."""
    return _DepthwiseFIR.apply(x, f, False, 2, 1, None)


REFERENCE_OPS = FusedOps("reference", bias_act, fir_filter, upsample2d, downsample2d, filtered_lrelu)


def conv2d_same(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, fast: bool = False) -> torch.Tensor:
    """Stride-1 convolution that keeps the size (odd kernel, zero padding k // 2); by Winograd's algorithm when the
    layer was built for it (`fast`, a CPU choice) and the call can run it."""
    if not (fast and winograd.runnable(x)):
        return F.conv2d(x, w, b, padding=w.shape[-1] // 2)
    y = winograd.conv3x3(x, w)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


# --- equalized-lr layers --------------------------------------------------------------------------------------------


class FullyConnectedLayer(nn.Module):
    """Dense layer with equalized learning rate and a learning-rate multiplier (0.01 in the mapping network).

    weight [out, in] is initialised N(0, 1/lr_multiplier^2) and used as weight * lr_multiplier / sqrt(in); the bias
    is used as bias * lr_multiplier. This makes the effective learning rate lr * lr_multiplier (StyleGAN, App. C).
    """

    def __init__(self, in_features, out_features, activation="linear", lr_multiplier=1.0, bias_init=0.0):
        super().__init__()
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        self.weight = nn.Parameter(torch.randn([out_features, in_features]) / lr_multiplier)
        self.bias = nn.Parameter(torch.full([out_features], float(bias_init)))
        self.weight_gain = lr_multiplier / math.sqrt(in_features)
        self.bias_gain = lr_multiplier
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = (self.weight * self.weight_gain).to(x.dtype)
        b = self.bias * self.bias_gain
        if self.activation == "linear":
            return torch.addmm(b.to(x.dtype).unsqueeze(0), x, w.t())
        return self.ops.bias_act(x.matmul(w.t()), b, self.activation, LRELU_GAIN, None)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, act={self.activation}"


class Conv2dLayer(nn.Module):
    """Convolution with equalized learning rate, optional bias, and optional 2x FIR downsampling (D's layers) or, 1x1
    only, upsampling (the residual path of a "resnet" G).

    With down=True the input is blurred first and then convolved with stride 2: the same linear map as the
    reference "convolve, then FIR-filter and decimate", but cheaper. With up=True the 1x1 convolution runs first,
    at the low resolution, and its output is upsampled: the order does not change a linear map.
    """

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        activation="linear",
        bias=True,
        down=False,
        conv_clamp=None,
        up=False,
    ):
        super().__init__()
        assert activation in ("lrelu", "linear"), activation
        assert not up or (kernel_size == 1 and not down), "up=True is implemented for a 1x1 convolution only"
        self.activation, self.down, self.up, self.conv_clamp = activation, down, up, conv_clamp
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        self.bias = nn.Parameter(torch.zeros([out_channels])) if bias else None
        self.weight_gain = 1 / math.sqrt(in_channels * kernel_size * kernel_size)
        self.act_gain = LRELU_GAIN if activation == "lrelu" else 1.0
        self.register_buffer("resample_filter", fir_kernel(), persistent=False)
        self.winograd = False  # same-size 3x3 convolution by Winograd's algorithm (set for CPU by the network)
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x: torch.Tensor, gain: float = 1.0) -> torch.Tensor:
        # lrelu(z) * g == lrelu(z * g) for g > 0, so the output gain folds into the weight and the bias, and the bias
        # into the convolution: one pass over the output instead of three (bias, activation, gain)
        g = self.act_gain * gain
        w = (self.weight * (self.weight_gain * g)).to(x.dtype)
        b = None if self.bias is None else (self.bias * g).to(x.dtype)
        k = w.shape[-1]
        if self.up:
            x = self.ops.upsample2d(F.conv2d(x, w), self.resample_filter)
            x = x if b is None else x + b.reshape(1, -1, 1, 1)  # after upsampling: a constant bias keeps its value
        elif self.down and k == 1:
            x = F.conv2d(self.ops.downsample2d(x, self.resample_filter), w, b)
        elif self.down:
            # blur with the padding of a same-size conv (k // 2) plus the filter's (1), then a strided valid conv
            x = F.conv2d(self.ops.fir_filter(x, self.resample_filter, pad=k // 2 + 1), w, b, stride=2)
        else:
            x = conv2d_same(x, w, b, fast=self.winograd)
        if self.activation == "lrelu":
            x = F.leaky_relu(x, LRELU_SLOPE, inplace=True)  # the convolution's output is not kept for its backward
        if self.conv_clamp is not None:
            x = x.clamp(-self.conv_clamp * gain, self.conv_clamp * gain)
        return x

    def extra_repr(self) -> str:
        out_c, in_c, k, _ = self.weight.shape
        return f"in={in_c}, out={out_c}, k={k}, act={self.activation}, down={self.down}, up={self.up}"


def modulated_conv2d(
    x, weight, styles, *, demodulate=True, up=False, fused=False, resample_filter=None, fast=False, fir=fir_filter
):
    """Convolve each sample with its own style-scaled weight (StyleGAN2 Eq. 1), optionally demodulated (Eq. 3).

    x [N, I, H, W], weight [O, I, k, k] (unit-variance; demodulation makes a weight gain unnecessary), styles [N, I].
    up=True doubles the resolution: transposed conv with stride 2, then the FIR filter with gain 4, as upstream.
    fused=False scales the activations before and after one shared-weight convolution (fast for training);
    fused=True builds the per-sample weights and runs one grouped convolution (fast for inference). Both are the
    same linear map. fast: the shared-weight same-size convolution by Winograd's algorithm (`conv2d_same`).
    fir: the implementation of `fir_filter` that filters the upsampled output (the network's FusedOps).
    """
    n, in_ch = x.shape[:2]
    out_ch, _, kh, kw = weight.shape
    if x.dtype == torch.float16 and demodulate:
        # rescale before the products so fp16 cannot overflow; demodulation divides the scale out again
        weight = weight * (1 / math.sqrt(in_ch * kh * kw) / weight.norm(float("inf"), dim=[1, 2, 3], keepdim=True))
        styles = styles / styles.norm(float("inf"), dim=1, keepdim=True)
    if fused:
        w = weight.unsqueeze(0) * styles.reshape(n, 1, in_ch, 1, 1)  # [N, O, I, k, k]
        if demodulate:
            w = w * (w.square().sum(dim=[2, 3, 4]) + 1e-8).rsqrt().reshape(n, out_ch, 1, 1, 1)
        y = _conv_resample(
            x.reshape(1, n * in_ch, *x.shape[2:]), w.reshape(n * out_ch, in_ch, kh, kw), up, n, resample_filter, fir=fir
        )
        return y.reshape(n, out_ch, *y.shape[2:])
    x = x * styles.to(x.dtype).reshape(n, in_ch, 1, 1)
    x = _conv_resample(x, weight.to(x.dtype), up, 1, resample_filter, fast, fir)
    if demodulate:
        # sum_{i,k} (w_oik s_i)^2 = sum_i s_i^2 sum_k w_oik^2: the Eq. 3 norm without materialising per-sample weights
        sigma_sq = styles.square() @ weight.square().sum(dim=[2, 3]).t()  # [N, O]
        x = x * (sigma_sq + 1e-8).rsqrt().to(x.dtype).reshape(n, out_ch, 1, 1)
    return x


def use_fused_modconv(training: bool, x: torch.Tensor) -> bool:
    """The official choice (fused grouped conv for fp32 or single-sample inference), on CUDA only.

    On CPU the shared-weight path is no slower over a whole 256 px net (faster at low resolutions, slower at the
    top ones; 3.4-4.1 s vs 4.2-4.3 s CPU summed over the layers, benchmarks/nets_forward_backward.py), and it
    keeps the batch size out of the convolution's `groups`, so a generator exported on CPU takes any batch size.
    """
    return not training and x.device.type == "cuda" and (x.dtype == torch.float32 or x.shape[0] == 1)


def _conv_resample(x, w, up, groups, resample_filter, fast=False, fir=fir_filter):
    """Plain (padding k//2) or 2x-upsampling grouped convolution; w is [groups * O, I, k, k]."""
    w = w.to(x.dtype)
    if not up:
        return conv2d_same(x, w, fast=fast) if groups == 1 else F.conv2d(x, w, padding=w.shape[-1] // 2, groups=groups)
    go, i, kh, kw = w.shape
    # conv_transpose2d wants [groups * I, O, k, k]
    wt = w.reshape(groups, go // groups, i, kh, kw).transpose(1, 2).reshape(groups * i, go // groups, kh, kw)
    x = F.conv_transpose2d(x, wt, stride=2, groups=groups)  # [.., 2H + k - 2]
    # pad so the 4-tap filter returns exactly 2H samples: 2H + k - 2 + 2 * pad - 3 = 2H
    return fir(x, resample_filter, pad=(len(FIR_TAPS) + 1 - kh) // 2, gain=4.0)
