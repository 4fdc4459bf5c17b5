"""Layers of the alias-free (StyleGAN3) generator (Karras et al. 2021, "Alias-Free Generative Adversarial Networks").

Every feature map is a sampled continuous signal: a `Band` says how many samples it has (including the margin
around the image), its sampling rate (samples per image width), its cutoff frequency f_c and its transition band
half-width f_h (Sec. 3.2 and App. F). Names of modules, parameters and buffers follow the official release.
"""

import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ganforge.nets.layers import LRELU_GAIN, REFERENCE_OPS, FullyConnectedLayer, block_dtype
from ganforge.nets.lowpass import lowpass_filter

FILTER_SIZE = 6  # taps of the up/downsampling filters, per factor of resampling (App. F)
LRELU_UPSAMPLING = 2  # the nonlinearity runs at twice the layer's sampling rate (Sec. 3.2)


@dataclasses.dataclass(frozen=True)
class Band:
    """A feature map's geometry and spectrum: size (samples per side), sampling rate, cutoff, half-width, channels."""

    size: int
    sampling_rate: int
    cutoff: float
    half_width: float
    channels: int


def modulated_conv2d(x, weight, styles, padding, demodulate=True, input_gain=None):
    """Modulated convolution (StyleGAN2 Eq. 1-3) as the alias-free generator applies it.

    Weights are first scaled to unit RMS per output channel and styles to unit RMS over the batch; demodulation
    divides both scales out again, but the pre-normalisation keeps fp16 products in range and makes the 1e-8 of
    Eq. 3 act as upstream. `input_gain` (scalar) multiplies the input after demodulation (the magnitude_ema
    normalisation). Shared-weight form: x is scaled per sample and channel, convolved once, then scaled per output
    channel; the same linear map as per-sample weights, without a grouped convolution.
    x [N, I, H, W], weight [O, I, k, k], styles [N, I] -> [N, O, H + 2 padding - k + 1, ...].
    """
    n, in_ch = x.shape[:2]
    if demodulate:
        weight = weight * weight.square().mean(dim=[1, 2, 3], keepdim=True).rsqrt()
        styles = styles * styles.square().mean().rsqrt()
    scale = styles if input_gain is None else styles * input_gain
    x = x * scale.to(x.dtype).reshape(n, in_ch, 1, 1)
    x = F.conv2d(x, weight.to(x.dtype), padding=padding)
    if demodulate:
        # sum_{i,k} (w_oik s_i)^2 = sum_i s_i^2 sum_k w_oik^2: Eq. 3 without materialising per-sample weights
        sigma_sq = styles.square() @ weight.square().sum(dim=[2, 3]).t()  # [N, O]
        x = x * (sigma_sq + 1e-8).rsqrt().to(x.dtype).reshape(n, -1, 1, 1)
    return x


class SynthesisInput(nn.Module):
    """Fourier features (Sec. 3.1, App. F): sinusoids with random frequencies inside a disc of radius `bandwidth`,
    sampled on the layer's grid through a per-sample similarity transform predicted from w, then mixed by a learned
    channels x channels matrix. Sampling a continuous function is what makes translation and rotation exact.

    The `transform` buffer (3x3, identity by default) is an extra user transform, applied after the learned one;
    like the official release it maps output-image coordinates to input coordinates (the *inverse* of the image's
    motion). forward() can also take one per call, [3, 3] or per sample [N, 3, 3], instead of the buffer.
    """

    def __init__(self, w_dim: int, band: Band):
        super().__init__()
        self.band = band
        c = band.channels
        self.weight = nn.Parameter(torch.randn([c, c]))
        # w -> (cos, sin, tx, ty) of the learned transform; starts as the identity: zero weight, bias (1, 0, 0, 0)
        self.affine = FullyConnectedLayer(w_dim, 4)
        with torch.no_grad():
            self.affine.weight.zero_()
            self.affine.bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0]))
        radius = torch.rand([c]).sqrt() * band.cutoff  # uniform over the disc: the radius's CDF grows as r^2
        angle = torch.rand([c]) * (2 * math.pi)
        self.register_buffer("transform", torch.eye(3))
        self.register_buffer("freqs", torch.stack([angle.cos(), angle.sin()], dim=1) * radius[:, None])
        self.register_buffer("phases", torch.rand([c]) - 0.5)

    def forward(self, w: torch.Tensor, transform: torch.Tensor | None = None) -> torch.Tensor:
        """w [N, w_dim] -> [N, channels, size, size]."""
        m = self._transforms(w, self.transform if transform is None else transform.to(w.device))
        phases = self.phases + (self.freqs @ m[:, :2, 2:]).squeeze(2)  # [N, C]: f . t
        freqs = self.freqs @ m[:, :2, :2]  # [N, C, 2]: f A, so that f . (A x + t) = (f A) . x + f . t
        # a user transform may push frequencies past the layer's band; fade them out linearly up to Nyquist
        sr, bw = self.band.sampling_rate, self.band.cutoff
        amplitudes = (1 - (freqs.norm(dim=2) - bw) / (sr / 2 - bw)).clamp(0, 1)
        size = self.band.size
        coords = (torch.arange(size, device=w.device, dtype=torch.float32) + 0.5 - size / 2) / sr  # pixel centres
        x = (
            coords[None, None, :, None] * freqs[:, None, None, :, 0]  # [N, H, W, C]; x along width
            + coords[None, :, None, None] * freqs[:, None, None, :, 1]
            + phases[:, None, None, :]
        )
        x = torch.sin(x * (2 * math.pi)) * amplitudes[:, None, None, :]
        x = x @ (self.weight / math.sqrt(self.band.channels)).t()
        return x.permute(0, 3, 1, 2)

    def _transforms(self, w: torch.Tensor, user: torch.Tensor) -> torch.Tensor:
        """[N, 3, 3]: rotation, then translation predicted from w (App. F), then the user transform."""
        t = self.affine(w)
        t = t / t[:, :2].norm(dim=1, keepdim=True)  # (cos, sin) on the unit circle
        cos, sin, tx, ty = t.unbind(dim=1)
        zero, one = torch.zeros_like(cos), torch.ones_like(cos)
        rotate = torch.stack([cos, -sin, zero, sin, cos, zero, zero, zero, one], dim=1).reshape(-1, 3, 3)
        translate = torch.stack([one, zero, -tx, zero, one, -ty, zero, zero, one], dim=1).reshape(-1, 3, 3)
        return rotate @ translate @ user

    def extra_repr(self) -> str:
        b = self.band
        return f"channels={b.channels}, size={b.size}, sampling_rate={b.sampling_rate:g}, bandwidth={b.cutoff:g}"


class SynthesisLayer(nn.Module):
    """Modulated conv, then the filtered leaky ReLU from band `inp` to band `out` (Sec. 3.2, Fig. 4b).

    The nonlinearity runs at LRELU_UPSAMPLING times the higher of the two sampling rates; the upsampling filter
    keeps the input's band, the downsampling filter sets the output's. `magnitude_ema` tracks the mean square of
    the input and normalises it away (App. F, "input normalisation"). The toRGB layer (is_torgb) is a modulated
    1x1 conv without demodulation, bias and clamp only.
    """

    def __init__(
        self,
        w_dim,
        inp: Band,
        out: Band,
        is_torgb,
        critically_sampled,
        use_fp16,
        conv_kernel=3,
        radial=False,
        conv_clamp=None,
    ):
        super().__init__()
        self.inp, self.out, self.is_torgb, self.use_fp16 = inp, out, is_torgb, use_fp16
        self.critically_sampled, self.conv_clamp = critically_sampled, conv_clamp
        self.conv_kernel = 1 if is_torgb else conv_kernel
        self.affine = FullyConnectedLayer(w_dim, inp.channels, bias_init=1.0)
        self.weight = nn.Parameter(torch.randn([out.channels, inp.channels, self.conv_kernel, self.conv_kernel]))
        self.bias = nn.Parameter(torch.zeros([out.channels]))
        self.register_buffer("magnitude_ema", torch.ones([]))
        tmp_rate = max(inp.sampling_rate, out.sampling_rate) * (1 if is_torgb else LRELU_UPSAMPLING)
        self.up, self.down = round(tmp_rate / inp.sampling_rate), round(tmp_rate / out.sampling_rate)
        assert inp.sampling_rate * self.up == tmp_rate and out.sampling_rate * self.down == tmp_rate
        up_taps = FILTER_SIZE * self.up if self.up > 1 and not is_torgb else 1
        down_taps = FILTER_SIZE * self.down if self.down > 1 and not is_torgb else 1
        self.down_radial = radial and not critically_sampled
        self.register_buffer("up_filter", lowpass_filter(up_taps, inp.cutoff, inp.half_width * 2, tmp_rate))
        self.register_buffer(
            "down_filter", lowpass_filter(down_taps, out.cutoff, out.half_width * 2, tmp_rate, radial=self.down_radial)
        )
        self.padding = self._padding(up_taps, down_taps)
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def _padding(self, up_taps: int, down_taps: int) -> tuple[int, int, int, int]:
        """Padding of the upsampled signal so that exactly out.size samples come out, centred (App. C.3)."""
        # samples needed before downsampling - samples after upsampling the conv output + what the filters eat
        total = (self.out.size - 1) * self.down + 1
        total -= (self.inp.size + self.conv_kernel - 1) * self.up
        total += up_taps + down_taps - 2
        lo = (total + self.up) // 2  # pixel centres at half-integers: shift by half an input sample
        hi = total - lo
        return (lo, hi, lo, hi)

    def forward(self, x, w, force_fp32=False, magnitude_ema_beta=None):
        """x [N, inp.channels, inp.size, inp.size], w [N, w_dim] -> [N, out.channels, out.size, out.size].

        magnitude_ema_beta: when given (training), first update magnitude_ema with this decay.
        """
        assert x.shape[1:] == (self.inp.channels, self.inp.size, self.inp.size), f"x: got {list(x.shape)}"
        if magnitude_ema_beta is not None:
            magnitude = x.detach().to(torch.float32).square().mean()
            self.magnitude_ema.copy_(magnitude.lerp(self.magnitude_ema, magnitude_ema_beta))
        styles = self.affine(w)
        if self.is_torgb:
            styles = styles * (1 / math.sqrt(self.inp.channels * self.conv_kernel**2))  # equalized lr, no demod
        dtype = block_dtype(self.use_fp16, force_fp32, x.device)
        x = modulated_conv2d(
            x.to(dtype),
            self.weight,
            styles,
            padding=self.conv_kernel - 1,
            demodulate=not self.is_torgb,
            input_gain=self.magnitude_ema.rsqrt(),
        )
        gain, slope = (1.0, 1.0) if self.is_torgb else (LRELU_GAIN, 0.2)
        return self.ops.filtered_lrelu(
            x,
            self.up_filter,
            self.down_filter,
            self.bias,
            up=self.up,
            down=self.down,
            padding=self.padding,
            gain=gain,
            slope=slope,
            clamp=self.conv_clamp,
        )

    def extra_repr(self) -> str:
        i, o = self.inp, self.out
        return (
            f"in={i.channels}x{i.size}@{i.sampling_rate:g}, out={o.channels}x{o.size}@{o.sampling_rate:g}, "
            f"cutoff={o.cutoff:.3g}, up={self.up}, down={self.down}, k={self.conv_kernel}, "
            f"critical={self.critically_sampled}, radial={self.down_radial}, fp16={self.use_fp16}"
        )


def layer_bands(
    resolution,
    img_channels,
    channel_base,
    channel_max,
    num_layers=14,
    num_critical=2,
    first_cutoff=2.0,
    first_stopband=2**2.1,
    last_stopband_rel=2**0.3,
    margin=10,
) -> list[Band]:
    """The output band of each layer L0 .. L{num_layers} (the last is toRGB's) (App. F, Fig. 4c); the Fourier
    input produces band 0 as well, so layer i maps band max(i - 1, 0) to band i.

    Cutoff f_c and minimum stopband f_t grow geometrically from the first layer to the last non-critical one, then
    stay; the sampling rate is the smallest power of two >= 2 f_t (at most the resolution), the half-width fills
    what is left up to max(f_t, s/2), and every layer but the last two carries a margin of `margin` samples.
    """
    last_cutoff = resolution / 2
    last_stopband = last_cutoff * last_stopband_rel
    exponents = np.minimum(np.arange(num_layers + 1) / (num_layers - num_critical), 1)
    cutoffs = first_cutoff * (last_cutoff / first_cutoff) ** exponents
    stopbands = first_stopband * (last_stopband / first_stopband) ** exponents
    rates = np.exp2(np.ceil(np.log2(np.minimum(stopbands * 2, resolution))))
    half_widths = np.maximum(stopbands, rates / 2) - cutoffs
    sizes = rates + margin * 2
    sizes[-2:] = resolution
    channels = np.rint(np.minimum((channel_base / 2) / cutoffs, channel_max))
    channels[-1] = img_channels
    return [
        Band(int(sizes[i]), int(rates[i]), float(cutoffs[i]), float(half_widths[i]), int(channels[i]))
        for i in range(num_layers + 1)
    ]
