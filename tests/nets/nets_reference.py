"""Slow, obvious float64 references for the networks, written from the papers and the official configuration's
definitions, never from ganforge.nets: loops for FIR resampling, per-sample modulated convolution, and whole
generator/discriminator forwards assembled from them by parameter name."""

import math

import numpy as np
import torch
import torch.nn.functional as F

SQRT2, SQRT_HALF = math.sqrt(2), math.sqrt(0.5)


def upfirdn_reference(x: np.ndarray, up: int, down: int, pad: tuple[int, int], gain: float) -> np.ndarray:
    """Textbook FIR resampling of one 2D image: zero insertion, padding, explicit 2D convolution, decimation."""
    taps = np.array([1.0, 3.0, 3.0, 1.0])
    f = np.outer(taps, taps) / np.outer(taps, taps).sum() * gain
    z = np.zeros((x.shape[0] * up, x.shape[1] * up))
    z[::up, ::up] = x
    z = np.pad(z, (pad, pad))
    k = f.shape[0]
    out = np.zeros((z.shape[0] - k + 1, z.shape[1] - k + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for a in range(k):
                for b in range(k):
                    out[i, j] += z[i + a, j + b] * f[k - 1 - a, k - 1 - b]  # convolution: flipped filter
    return out[::down, ::down]


def apply_reference(x: torch.Tensor, **kwargs) -> torch.Tensor:
    """upfirdn_reference over every [N, C] image of a tensor."""
    out = [[upfirdn_reference(img.numpy(), **kwargs) for img in sample] for sample in x.double()]
    return torch.tensor(np.array(out))


def modconv_reference(x, weight, styles, demodulate, up):
    """Per-sample loop with plain convolutions and a hand-built transposed convolution."""
    out = []
    k = weight.shape[-1]
    for i in range(x.shape[0]):
        w = weight * styles[i].reshape(1, -1, 1, 1)  # StyleGAN2 Eq. 1
        if demodulate:
            w = w / (w.square().sum(dim=[1, 2, 3], keepdim=True) + 1e-8).sqrt()  # Eq. 3
        xi = x[i : i + 1]
        if up:
            z = torch.zeros(1, xi.shape[1], 2 * xi.shape[2] - 1, 2 * xi.shape[3] - 1, dtype=x.dtype)
            z[..., ::2, ::2] = xi  # zero insertion, then full convolution == transposed conv with stride 2
            y = F.conv2d(F.pad(z, [k - 1] * 4), w.flip(-1, -2))
            y = apply_reference(y, up=1, down=1, pad=(1, 1), gain=4.0)
        else:
            y = F.conv2d(xi, w, padding=k // 2)
        out.append(y)
    return torch.cat(out)


def lrelu(x: torch.Tensor) -> torch.Tensor:
    """Leaky ReLU (slope 0.2) scaled by sqrt(2) to keep the second moment (He et al. 2015)."""
    return torch.where(x >= 0, x, 0.2 * x) * SQRT2


def dense(x, weight, bias, lr_multiplier: float = 1.0):
    """Equalized-lr dense layer (ProGAN Sec. 4.1): weight * lr_multiplier / sqrt(fan_in), bias * lr_multiplier."""
    return x @ (weight * lr_multiplier / math.sqrt(weight.shape[1])).T + bias * lr_multiplier


def conv_reference(x, weight, bias, down: bool):
    """Equalized-lr convolution (weight / sqrt(fan_in)), 'same' size, or halving the resolution the official generic
    way: zero-pad by k//2 + 1, convolve, then FIR-filter and keep every second sample."""
    k = weight.shape[-1]
    w = weight / math.sqrt(weight[0].numel())
    if down:
        y = apply_reference(F.conv2d(F.pad(x, [k // 2 + 1] * 4), w), up=1, down=2, pad=(0, 0), gain=1.0)
    else:
        y = F.conv2d(x, w, padding=k // 2)
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


def mapping_reference(state: dict, z: torch.Tensor, num_layers: int, num_ws: int) -> torch.Tensor:
    """z normalised to unit mean square, `num_layers` lrelu dense layers at lr multiplier 0.01, one w per layer."""
    x = z / (z.square().mean(dim=1, keepdim=True) + 1e-8).sqrt()
    for i in range(num_layers):
        x = lrelu(dense(x, state[f"mapping.fc{i}.weight"], state[f"mapping.fc{i}.bias"], lr_multiplier=0.01))
    return x[:, None].repeat(1, num_ws, 1)


def _synthesis_layer(state, name, x, w, up=False):
    """Modulated 3x3 conv + const noise x strength + bias, lrelu (StyleGAN2 Fig. 2d)."""
    styles = dense(w, state[f"{name}.affine.weight"], state[f"{name}.affine.bias"])
    y = modconv_reference(x, state[f"{name}.weight"], styles, demodulate=True, up=up)
    y = y + state[f"{name}.noise_const"] * state[f"{name}.noise_strength"]
    return lrelu(y + state[f"{name}.bias"].reshape(1, -1, 1, 1))


def _torgb(state, name, x, w):
    """Modulated 1x1 conv without demodulation, its equalized-lr gain on the styles, + bias."""
    weight = state[f"{name}.weight"]
    styles = dense(w, state[f"{name}.affine.weight"], state[f"{name}.affine.bias"]) / math.sqrt(weight.shape[1])
    return modconv_reference(x, weight, styles, demodulate=False, up=False) + state[f"{name}.bias"].reshape(1, -1, 1, 1)


def upconv1x1_reference(x, weight):
    """A "resnet" G's skip path: the 1x1 equalized-lr convolution of the FIR-upsampled features (no bias)."""
    return conv_reference(apply_reference(x, up=2, down=1, pad=(2, 1), gain=4.0), weight, None, down=False)


def synthesis_reference(state: dict, ws: torch.Tensor, resolution: int, architecture: str = "skip") -> torch.Tensor:
    """The generators of StyleGAN2 Fig. 7 with const noise: 4x4 const, then per resolution an upsampling conv and a
    conv. "skip" (Fig. 7b): a toRGB per resolution added to the FIR-upsampled image so far; "orig" and "resnet": one
    toRGB at the end; "resnet" (Fig. 7c): the two convs plus a 1x1 upsampled skip, both x sqrt(1/2). Block r uses
    w's [i, i+1, i+2], i advancing by 2."""
    x = state["synthesis.b4.const"][None].repeat(ws.shape[0], 1, 1, 1)
    x = _synthesis_layer(state, "synthesis.b4.conv1", x, ws[:, 0])
    img = _torgb(state, "synthesis.b4.torgb", x, ws[:, 1]) if architecture == "skip" else None
    i, res = 1, 8
    while res <= resolution:
        y = _synthesis_layer(state, f"synthesis.b{res}.conv0", x, ws[:, i], up=True)
        y = _synthesis_layer(state, f"synthesis.b{res}.conv1", y, ws[:, i + 1])
        if architecture == "resnet":
            y = (y + upconv1x1_reference(x, state[f"synthesis.b{res}.skip.weight"])) * SQRT_HALF
        x = y
        if architecture == "skip":
            upsampled = apply_reference(img, up=2, down=1, pad=(2, 1), gain=4.0)
            img = upsampled + _torgb(state, f"synthesis.b{res}.torgb", x, ws[:, i + 2])
        elif res == resolution:
            img = _torgb(state, f"synthesis.b{res}.torgb", x, ws[:, i + 2])
        i, res = i + 2, res * 2
    return img


def minibatch_stddev_reference(x: torch.Tensor, group: int) -> torch.Tensor:
    """ProGAN Sec. 3: append the mean over features of the stddev within each group; sample i's group is the samples
    i mod N/G apart."""
    n = x.shape[0]
    stats = torch.empty(n, dtype=x.dtype)
    for i in range(n):
        members = x[i % (n // group) :: n // group]
        stats[i] = members.var(dim=0, unbiased=False).add(1e-8).sqrt().mean()
    return torch.cat([x, stats.reshape(n, 1, 1, 1).expand(n, 1, *x.shape[2:])], dim=1)


def discriminator_reference(state: dict, img: torch.Tensor, resolution: int, group: int,
                            architecture: str = "resnet") -> torch.Tensor:  # fmt: skip
    """The discriminators of StyleGAN2 Fig. 7: fromRGB; per block conv 3x3, conv 3x3 down; "resnet" (Fig. 7c): plus a
    1x1 down skip, both x sqrt(1/2); "skip" (Fig. 7b): every block and the 4x4 head add fromRGB of the image
    FIR-downsampled to their resolution; then minibatch stddev, conv 3x3, dense, dense to one logit."""

    def fromrgb(name, image):
        return lrelu(conv_reference(image, state[f"{name}.fromrgb.weight"], state[f"{name}.fromrgb.bias"], False))

    x = fromrgb(f"b{resolution}", img)
    res = resolution
    while res > 4:
        p = f"b{res}"
        if architecture == "skip" and res < resolution:
            x = x + fromrgb(p, img)
        y = lrelu(conv_reference(x, state[f"{p}.conv0.weight"], state[f"{p}.conv0.bias"], down=False))
        y = lrelu(conv_reference(y, state[f"{p}.conv1.weight"], state[f"{p}.conv1.bias"], down=True))
        if architecture == "resnet":
            y = (y + conv_reference(x, state[f"{p}.skip.weight"], None, down=True)) * SQRT_HALF
        img = apply_reference(img, up=1, down=2, pad=(1, 1), gain=1.0)
        x, res = y, res // 2
    if architecture == "skip":
        x = x + fromrgb("b4", img)
    x = minibatch_stddev_reference(x, group)
    x = lrelu(conv_reference(x, state["b4.conv.weight"], state["b4.conv.bias"], down=False))
    x = lrelu(dense(x.flatten(1), state["b4.fc.weight"], state["b4.fc.bias"]))
    return dense(x, state["b4.out.weight"], state["b4.out.bias"])
