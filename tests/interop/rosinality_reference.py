"""rosinality/stylegan2-pytorch networks for tests: random state dicts with that repository's names and shapes, and a
slow, obvious re-statement of what its model.py computes (PixelNorm, EqualLinear, ModulatedConv2d with a per-sample
loop, NoiseInjection, FusedLeakyReLU, ToRGB, upfirdn2d, ResBlock, minibatch stddev), written from its description and
independent of ganforge's networks, so an import can be checked against it."""

import math

import torch
import torch.nn.functional as F

SQRT2 = math.sqrt(2)
LR_MLP = 0.01


def blur_kernel() -> torch.Tensor:
    k = torch.tensor([1.0, 3.0, 3.0, 1.0])
    k = k[None, :] * k[:, None]
    return k / k.sum()


# --- random state dicts ---------------------------------------------------------------------------------------------


def generator_state(size: int, style_dim: int, n_mlp: int, channels: dict, seed: int) -> dict:
    """A rosinality Generator state dict; channels maps resolution -> feature maps."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0, shift=0.0):
        return torch.randn(shape, generator=g) * scale + shift

    sd = {}
    for i in range(1, n_mlp + 1):
        sd[f"style.{i}.weight"] = rand(style_dim, style_dim) / LR_MLP
        sd[f"style.{i}.bias"] = rand(style_dim, scale=10)

    def modulated(prefix, cin, cout, k):
        sd[f"{prefix}.conv.weight"] = rand(1, cout, cin, k, k)
        sd[f"{prefix}.conv.modulation.weight"] = rand(cin, style_dim)
        sd[f"{prefix}.conv.modulation.bias"] = rand(cin, scale=0.2, shift=1.0)

    def styled(prefix, cin, cout, up):
        modulated(prefix, cin, cout, 3)
        sd[f"{prefix}.noise.weight"] = rand(1, scale=0.3)
        sd[f"{prefix}.activate.bias"] = rand(cout, scale=0.2)
        if up:
            sd[f"{prefix}.conv.blur.kernel"] = blur_kernel() * 4

    def to_rgb(prefix, cin, up):
        modulated(prefix, cin, 3, 1)
        sd[f"{prefix}.bias"] = rand(1, 3, 1, 1, scale=0.2)
        if up:
            sd[f"{prefix}.upsample.kernel"] = blur_kernel() * 4

    sd["input.input"] = rand(1, channels[4], 4, 4)
    styled("conv1", channels[4], channels[4], up=False)
    to_rgb("to_rgb1", channels[4], up=False)
    log_size = int(math.log2(size))
    for k in range(log_size - 2):
        res = 2 ** (k + 3)
        styled(f"convs.{2 * k}", channels[res // 2], channels[res], up=True)
        styled(f"convs.{2 * k + 1}", channels[res], channels[res], up=False)
        to_rgb(f"to_rgbs.{k}", channels[res], up=True)
    for j in range((log_size - 2) * 2 + 1):
        res = 2 ** ((j + 5) // 2)
        sd[f"noises.noise_{j}"] = rand(1, 1, res, res)
    return sd


def discriminator_state(size: int, channels: dict, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    sd = {"convs.0.0.weight": torch.randn([channels[size], 3, 1, 1], generator=g),
          "convs.0.1.bias": torch.randn([channels[size]], generator=g) * 0.2}  # fmt: skip
    for i, res in enumerate(2**j for j in range(int(math.log2(size)), 2, -1)):
        cin, cout = channels[res], channels[res // 2]
        prefix = f"convs.{i + 1}"
        sd[f"{prefix}.conv1.0.weight"] = torch.randn([cin, cin, 3, 3], generator=g)
        sd[f"{prefix}.conv1.1.bias"] = torch.randn([cin], generator=g) * 0.2
        sd[f"{prefix}.conv2.0.kernel"] = blur_kernel()
        sd[f"{prefix}.conv2.1.weight"] = torch.randn([cout, cin, 3, 3], generator=g)
        sd[f"{prefix}.conv2.2.bias"] = torch.randn([cout], generator=g) * 0.2
        sd[f"{prefix}.skip.0.kernel"] = blur_kernel()
        sd[f"{prefix}.skip.1.weight"] = torch.randn([cout, cin, 1, 1], generator=g)
    c4 = channels[4]
    sd["final_conv.0.weight"] = torch.randn([c4, c4 + 1, 3, 3], generator=g)
    sd["final_conv.1.bias"] = torch.randn([c4], generator=g) * 0.2
    sd["final_linear.0.weight"] = torch.randn([c4, c4 * 16], generator=g)
    sd["final_linear.0.bias"] = torch.randn([c4], generator=g) * 0.2
    sd["final_linear.1.weight"] = torch.randn([1, c4], generator=g)
    sd["final_linear.1.bias"] = torch.randn([1], generator=g) * 0.2
    return sd


# --- what rosinality's model computes -------------------------------------------------------------------------------


def upfirdn(x, kernel, up=1, down=1, pad=(0, 0)):
    """Insert up-1 zeros after each sample, pad (pad0, pad1) on both axes, convolve with the kernel, keep every down."""
    n, c, h, w = x.shape
    if up > 1:
        spread = x.new_zeros([n, c, h * up, w * up])
        spread[:, :, ::up, ::up] = x
        x = spread
    x = F.pad(x, [pad[0], pad[1], pad[0], pad[1]])
    x = F.conv2d(x, torch.flip(kernel, [0, 1])[None, None].repeat(c, 1, 1, 1), groups=c)
    return x[:, :, ::down, ::down]


def fused_lrelu(x, bias):
    return F.leaky_relu(x + bias.reshape(1, -1, *[1] * (x.ndim - 2)), 0.2) * SQRT2


def equal_linear(x, sd, prefix, lr_mul=1.0, activate=False):
    weight, bias = sd[f"{prefix}.weight"], sd[f"{prefix}.bias"]
    out = x @ (weight * lr_mul / math.sqrt(weight.shape[1])).t()
    return fused_lrelu(out, bias * lr_mul) if activate else out + bias * lr_mul


def modulated_conv(x, latent, sd, prefix, demodulate=True, upsample=False):
    weight = sd[f"{prefix}.conv.weight"][0]  # [O, I, k, k]
    style = equal_linear(latent, sd, f"{prefix}.conv.modulation")
    outs = []
    for n in range(x.shape[0]):
        w = weight / math.sqrt(weight[0].numel()) * style[n].reshape(1, -1, 1, 1)
        if demodulate:
            w = w / torch.sqrt(w.square().sum(dim=[1, 2, 3], keepdim=True) + 1e-8)
        if upsample:
            y = F.conv_transpose2d(x[n : n + 1], w.transpose(0, 1), stride=2)
            outs.append(upfirdn(y, blur_kernel() * 4, pad=(1, 1)))
        else:
            outs.append(F.conv2d(x[n : n + 1], w, padding=w.shape[-1] // 2))
    return torch.cat(outs)


def mapping(sd, z, n_mlp):
    x = z * torch.rsqrt(z.square().mean(dim=1, keepdim=True) + 1e-8)
    for i in range(1, n_mlp + 1):
        x = equal_linear(x, sd, f"style.{i}", lr_mul=LR_MLP, activate=True)
    return x


def synthesis(sd, latent, size):
    """latent [N, n_latent, style_dim] -> image; constant noise (randomize_noise=False)."""

    def styled(x, i, prefix, noise, upsample=False):
        x = modulated_conv(x, latent[:, i], sd, prefix, upsample=upsample)
        return fused_lrelu(
            x + sd[f"{prefix}.noise.weight"] * sd[f"noises.noise_{noise}"], sd[f"{prefix}.activate.bias"]
        )

    def to_rgb(x, i, prefix, skip):
        out = modulated_conv(x, latent[:, i], sd, prefix, demodulate=False) + sd[f"{prefix}.bias"]
        return out if skip is None else out + upfirdn(skip, blur_kernel() * 4, up=2, pad=(2, 1))

    out = styled(sd["input.input"].repeat(latent.shape[0], 1, 1, 1), 0, "conv1", 0)
    skip = to_rgb(out, 1, "to_rgb1", None)
    for k in range(int(math.log2(size)) - 2):
        i = 2 * k + 1
        out = styled(out, i, f"convs.{2 * k}", 2 * k + 1, upsample=True)
        out = styled(out, i + 1, f"convs.{2 * k + 1}", 2 * k + 2)
        skip = to_rgb(out, i + 2, f"to_rgbs.{k}", skip)
    return skip


def conv_layer(x, sd, prefix, downsample=False, activate=True):
    index = 0
    if downsample:
        k = sd[f"{prefix}.1.weight"].shape[-1]
        p = 2 + (k - 1)
        x = upfirdn(x, blur_kernel(), pad=((p + 1) // 2, p // 2))
        index = 1
    weight = sd[f"{prefix}.{index}.weight"]
    stride, padding = (2, 0) if downsample else (1, weight.shape[-1] // 2)
    x = F.conv2d(x, weight / math.sqrt(weight[0].numel()), stride=stride, padding=padding)
    return fused_lrelu(x, sd[f"{prefix}.{index + 1}.bias"]) if activate else x


def discriminator(sd, img, size):
    out = conv_layer(img, sd, "convs.0")
    for i in range(1, int(math.log2(size)) - 1):
        x = out
        out = conv_layer(conv_layer(x, sd, f"convs.{i}.conv1"), sd, f"convs.{i}.conv2", downsample=True)
        out = (out + conv_layer(x, sd, f"convs.{i}.skip", downsample=True, activate=False)) / SQRT2
    batch, channel, height, width = out.shape
    group = min(batch, 4)
    std = out.view(group, -1, 1, channel, height, width)
    std = torch.sqrt(std.var(0, unbiased=False) + 1e-8).mean([2, 3, 4], keepdim=True).squeeze(2)
    out = conv_layer(torch.cat([out, std.repeat(group, 1, height, width)], 1), sd, "final_conv")
    out = equal_linear(out.view(batch, -1), sd, "final_linear.0", activate=True)
    return equal_linear(out, sd, "final_linear.1")
