"""What NVlabs' TensorFlow StyleGAN2 creates and computes, in float64 numpy, from the published graph definitions
(training/networks.py of stylegan2-ada and networks_stylegan2.py of stylegan2, dnnlib/tflib/ops/upfirdn_2d.py,
fused_bias_act.py), never through ganforge: the reference an imported network must equal.

`tf_variables` makes random variables of the names and shapes TF's build functions create for a set of static
kwargs; `tf_generate` and `tf_discriminate` run TF's forward pass on them (mapping with LabelEmbed, synthesis with
constant noise; each network's `architecture`, G's 'skip' and D's 'resnet' by default): equalized learning rate as
`get_weight` applies it (weights times lrmul / sqrt(fan_in)), the style bias + 1, `conv2d_transpose` of the flipped
kernel for the upsampling conv, `upfirdn_2d`'s zero insertion, padding and true convolution with the FIR filter,
leaky ReLU with gain sqrt(2).
Every `architecture` of G and D ('orig', 'skip', 'resnet'), and otherwise only the default options ([1, 3, 3, 1],
lrelu, mbstd with one feature) are covered.
"""

import math

import numpy as np

SQRT2 = math.sqrt(2)
FIR = np.outer([1, 3, 3, 1], [1, 3, 3, 1]) / 64.0  # _setup_kernel: the outer product, normalised to sum 1


def nf(kwargs: dict, stage: int) -> int:
    return int(np.clip(int(kwargs["fmap_base"] / 2.0**stage), 1, kwargs["fmap_max"]))


def _modulated_shapes(prefix: str, k: int, fmaps_in: int, fmaps_out: int, dlatent: int, noise=True) -> dict:
    shapes = {
        f"{prefix}/weight": (k, k, fmaps_in, fmaps_out),
        f"{prefix}/mod_weight": (dlatent, fmaps_in),
        f"{prefix}/mod_bias": (fmaps_in,),
        f"{prefix}/bias": (fmaps_out,),
    }
    return shapes | ({f"{prefix}/noise_strength": ()} if noise else {})


def generator_shapes(kw: dict) -> tuple[dict, dict, dict]:
    """(G's own, G_mapping's, G_synthesis's) variable shapes for stylegan2-ada's G_main with these kwargs."""
    log2, latent, dlatent, channels = (
        int(math.log2(kw["resolution"])),
        kw["latent_size"],
        kw["dlatent_size"],
        kw["num_channels"],
    )
    mapping, width = {}, latent
    if kw["label_size"]:
        mapping |= {"LabelEmbed/weight": (kw["label_size"], latent), "LabelEmbed/bias": (latent,)}
        width += latent
    for i in range(kw["mapping_layers"]):
        mapping |= {f"Dense{i}/weight": (width, dlatent), f"Dense{i}/bias": (dlatent,)}
        width = dlatent
    synthesis = {f"noise{i}": (1, 1, 2 ** ((i + 5) // 2), 2 ** ((i + 5) // 2)) for i in range(2 * log2 - 3)}
    synthesis["4x4/Const/const"] = (1, nf(kw, 1), 4, 4)
    synthesis |= _modulated_shapes("4x4/Conv", 3, nf(kw, 1), nf(kw, 1), dlatent)
    skip = kw.get("architecture", "skip") == "skip"  # ToRGB in every block, else in the last one only
    if skip or log2 == 2:
        synthesis |= _modulated_shapes("4x4/ToRGB", 1, nf(kw, 1), channels, dlatent, noise=False)
    for res in range(3, log2 + 1):
        scope = f"{2**res}x{2**res}"
        synthesis |= _modulated_shapes(f"{scope}/Conv0_up", 3, nf(kw, res - 2), nf(kw, res - 1), dlatent)
        synthesis |= _modulated_shapes(f"{scope}/Conv1", 3, nf(kw, res - 1), nf(kw, res - 1), dlatent)
        if skip or res == log2:
            synthesis |= _modulated_shapes(f"{scope}/ToRGB", 1, nf(kw, res - 1), channels, dlatent, noise=False)
        if kw.get("architecture") == "resnet":
            synthesis[f"{scope}/Skip/weight"] = (1, 1, nf(kw, res - 2), nf(kw, res - 1))
    return {"dlatent_avg": (dlatent,)}, mapping, synthesis


def discriminator_shapes(kw: dict) -> dict:
    """Variable shapes of stylegan2-ada's D_main with these kwargs (FromRGB at every resolution for a 'skip' D, at
    the top one only otherwise; Skip in each block of a 'resnet' D)."""
    log2, architecture = int(math.log2(kw["resolution"])), kw.get("architecture", "resnet")
    shapes = {}
    for res in range(log2, 1, -1):
        scope = f"{2**res}x{2**res}"
        if architecture == "skip" or res == log2:
            shapes |= {
                f"{scope}/FromRGB/weight": (1, 1, kw["num_channels"], nf(kw, res - 1)),
                f"{scope}/FromRGB/bias": (nf(kw, res - 1),),
            }
        if res == 2:
            break
        shapes |= {
            f"{scope}/Conv0/weight": (3, 3, nf(kw, res - 1), nf(kw, res - 1)),
            f"{scope}/Conv0/bias": (nf(kw, res - 1),),
            f"{scope}/Conv1_down/weight": (3, 3, nf(kw, res - 1), nf(kw, res - 2)),
            f"{scope}/Conv1_down/bias": (nf(kw, res - 2),),
        }
        if architecture == "resnet":
            shapes[f"{scope}/Skip/weight"] = (1, 1, nf(kw, res - 1), nf(kw, res - 2))
    shapes |= {
        "4x4/Conv/weight": (3, 3, nf(kw, 1) + 1, nf(kw, 1)),
        "4x4/Conv/bias": (nf(kw, 1),),
        "4x4/Dense0/weight": (nf(kw, 1) * 16, nf(kw, 0)),
        "4x4/Dense0/bias": (nf(kw, 0),),
    }
    cmap = nf(kw, 0) if kw["label_size"] else 1
    shapes |= {"Output/weight": (nf(kw, 0), cmap), "Output/bias": (cmap,)}
    if kw["label_size"]:
        shapes |= {"LabelEmbed/weight": (kw["label_size"], cmap), "LabelEmbed/bias": (cmap,)}
        for i in range(kw["mapping_layers"]):
            shapes |= {f"Mapping{i}/weight": (cmap, cmap), f"Mapping{i}/bias": (cmap,)}
    return shapes


def random_variables(shapes: dict, rng: np.random.Generator) -> dict:
    return {name: rng.standard_normal(shape) * 0.5 for name, shape in shapes.items()}


# --- TF's ops ---------------------------------------------------------------------------------------------------


def lrelu(x):
    return np.where(x >= 0, x, 0.2 * x) * SQRT2  # fused_bias_act's lrelu: alpha 0.2, gain sqrt(2)


def dense(x, w, b=None, lrmul=1.0):
    y = x @ (w * (lrmul / math.sqrt(w.shape[0])))  # get_weight: he_std * lrmul, fan_in = in
    return y if b is None else y + b * lrmul


def normalize(x):
    return x / np.sqrt(np.mean(x**2, axis=1, keepdims=True) + 1e-8)


def conv2d_same(x, w):
    """tf.nn.conv2d, SAME, x [N, I, H, W], w [k, k, I, O]: cross-correlation."""
    k, (n, _, h, width) = w.shape[0], x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    out = np.zeros((n, w.shape[3], h, width))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("nihw,io->nohw", xp[:, :, dy : dy + h, dx : dx + width], w[dy, dx])
    return out


def upfirdn(x, k, up=1, down=1, pad0=0, pad1=0):
    """_upfirdn_2d_ref: zeros inserted after each sample, padded, convolved with k (TF flips it), subsampled."""
    if up > 1:
        z = np.zeros((*x.shape[:2], x.shape[2] * up, x.shape[3] * up))
        z[:, :, ::up, ::up] = x
        x = z
    x = np.pad(x, ((0, 0), (0, 0), (pad0, pad1), (pad0, pad1)))
    flipped, taps = k[::-1, ::-1], k.shape[0]
    size = x.shape[2] - taps + 1
    out = sum(x[:, :, dy : dy + size, dx : dx + size] * flipped[dy, dx] for dy in range(taps) for dx in range(taps))
    return out[:, :, ::down, ::down]


def upsample_2d(x):
    return upfirdn(x, FIR * 4, up=2, pad0=2, pad1=1)  # p = 4 - 2: pad0 = (p + 1) // 2 + 1, pad1 = p // 2


def upsample_conv_2d(x, w):
    """conv2d_transpose (stride 2, VALID) of the spatially flipped kernel, then the FIR filter, padded by
    p = (4 - 2) - (k - 1) as (p + 1) // 2 + 1 and p // 2 + 1."""
    k, (n, _, h, width) = w.shape[0], x.shape
    flipped = w[::-1, ::-1]
    out = np.zeros((n, w.shape[3], (h - 1) * 2 + k, (width - 1) * 2 + k))
    for dy in range(k):
        for dx in range(k):
            out[:, :, dy : dy + 2 * h : 2, dx : dx + 2 * width : 2] += np.einsum("nihw,io->nohw", x, flipped[dy, dx])
    p = 2 - (k - 1)
    return upfirdn(out, FIR * 4, pad0=(p + 1) // 2 + 1, pad1=p // 2 + 1)


def conv_downsample_2d(x, w):
    """The FIR filter padded by p = 2 + (k - 1), then a stride-2 VALID convolution."""
    k = w.shape[0]
    p = 2 + (k - 1)
    x = upfirdn(x, FIR, pad0=(p + 1) // 2, pad1=p // 2)
    size = (x.shape[2] - k) // 2 + 1
    out = np.zeros((x.shape[0], w.shape[3], size, size))
    for dy in range(k):
        for dx in range(k):
            part = x[:, :, dy : dy + 2 * size - 1 : 2, dx : dx + 2 * size - 1 : 2]
            out += np.einsum("nihw,io->nohw", part, w[dy, dx])
    return out


def scaled(w):
    return w / math.sqrt(np.prod(w.shape[:-1]))  # get_weight's runtime coefficient, gain 1, lrmul 1


def modulated_conv(x, dlatent, v, scope, demodulate=True, up=False):
    w = scaled(v[f"{scope}/weight"])
    styles = dense(dlatent, v[f"{scope}/mod_weight"], v[f"{scope}/mod_bias"]) + 1  # [N, I]: the bias starts at 1
    out = []
    for n in range(x.shape[0]):
        ww = w * styles[n][None, None, :, None]
        if demodulate:
            ww = ww / np.sqrt(np.sum(ww**2, axis=(0, 1, 2)) + 1e-8)
        out.append((upsample_conv_2d if up else conv2d_same)(x[n : n + 1], ww))
    return np.concatenate(out)


def clamp(x, conv_clamp):
    return x if conv_clamp is None else np.clip(x, -conv_clamp, conv_clamp)


# --- the networks ---------------------------------------------------------------------------------------------


def tf_generate(own, mapping, synthesis, kw, z, c, psi=1.0, cutoff=None):
    """G_main with truncation (psi, cutoff) and noise from the noise variables (randomize_noise=False)."""
    x = normalize(z)
    if kw["label_size"]:
        x = np.concatenate([x, normalize(dense(c, mapping["LabelEmbed/weight"], mapping["LabelEmbed/bias"]))], 1)
    for i in range(kw["mapping_layers"]):
        x = lrelu(dense(x, mapping[f"Dense{i}/weight"], mapping[f"Dense{i}/bias"], lrmul=0.01))
    log2 = int(math.log2(kw["resolution"]))
    ws = np.repeat(x[:, None], 2 * log2 - 2, axis=1)
    layers = ws.shape[1] if cutoff is None else cutoff
    ws[:, :layers] = own["dlatent_avg"] + psi * (ws[:, :layers] - own["dlatent_avg"])
    return _synthesis(synthesis, kw, ws)


def _layer(x, w, v, scope, noise, kw, up=False):
    x = modulated_conv(x, w, v, scope, up=up) + v[noise] * v[f"{scope}/noise_strength"]
    return clamp(lrelu(x + v[f"{scope}/bias"][None, :, None, None]), kw.get("conv_clamp"))


def _torgb(x, w, v, scope, kw):
    t = modulated_conv(x, w, v, scope, demodulate=False)
    return clamp(t + v[f"{scope}/bias"][None, :, None, None], kw.get("conv_clamp"))


def _synthesis(v, kw, ws):
    architecture, log2 = kw.get("architecture", "skip"), int(math.log2(kw["resolution"]))
    x = np.repeat(v["4x4/Const/const"], ws.shape[0], axis=0)
    x = _layer(x, ws[:, 0], v, "4x4/Conv", "noise0", kw)
    img = _torgb(x, ws[:, 1], v, "4x4/ToRGB", kw) if architecture == "skip" or log2 == 2 else None
    for res in range(3, log2 + 1):
        scope, before = f"{2**res}x{2**res}", x
        x = _layer(x, ws[:, res * 2 - 5], v, f"{scope}/Conv0_up", f"noise{res * 2 - 5}", kw, up=True)
        x = _layer(x, ws[:, res * 2 - 4], v, f"{scope}/Conv1", f"noise{res * 2 - 4}", kw)
        if architecture == "resnet":  # the block's input, upsampled by a 1x1 conv without bias, averaged in
            x = (x + upsample_conv_2d(before, scaled(v[f"{scope}/Skip/weight"]))) / SQRT2
        if architecture == "skip":
            img = upsample_2d(img) + _torgb(x, ws[:, res * 2 - 3], v, f"{scope}/ToRGB", kw)
        elif res == log2:
            img = _torgb(x, ws[:, res * 2 - 3], v, f"{scope}/ToRGB", kw)
    return img


def minibatch_stddev(x, group_size):
    g = min(group_size, x.shape[0])
    y = x.reshape(g, -1, 1, x.shape[1], *x.shape[2:])  # [G, n, F=1, c, H, W]
    y = np.sqrt(np.mean((y - y.mean(axis=0)) ** 2, axis=0) + 1e-8).mean(axis=(2, 3, 4))  # [n, F]
    y = np.tile(y.reshape(-1, 1, 1, 1), (g, 1, *x.shape[2:]))
    return np.concatenate([x, y], axis=1)


def _fromrgb(x, y, v, scope):
    t = lrelu(conv2d_same(y, scaled(v[f"{scope}/FromRGB/weight"])) + v[f"{scope}/FromRGB/bias"][None, :, None, None])
    return t if x is None else x + t


def tf_discriminate(v, kw, img, c):
    """D_main (no comparison methods) on images [N, C, H, W] and one-hot labels."""
    log2, architecture = int(math.log2(kw["resolution"])), kw.get("architecture", "resnet")
    x, y = None, img
    for res in range(log2, 2, -1):
        scope = f"{2**res}x{2**res}"
        if architecture == "skip" or res == log2:
            x = _fromrgb(x, y, v, scope)
        skip = x
        x = lrelu(conv2d_same(x, scaled(v[f"{scope}/Conv0/weight"])) + v[f"{scope}/Conv0/bias"][None, :, None, None])
        x = conv_downsample_2d(x, scaled(v[f"{scope}/Conv1_down/weight"]))
        x = lrelu(x + v[f"{scope}/Conv1_down/bias"][None, :, None, None])
        if architecture == "resnet":
            x = (x + conv_downsample_2d(skip, scaled(v[f"{scope}/Skip/weight"]))) / SQRT2
        if architecture == "skip":
            y = upfirdn(y, FIR, down=2, pad0=1, pad1=1)  # downsample_2d: p = 4 - 2
    if architecture == "skip":
        x = _fromrgb(x, y, v, "4x4")
    x = minibatch_stddev(x, kw["mbstd_group_size"])
    x = lrelu(conv2d_same(x, scaled(v["4x4/Conv/weight"])) + v["4x4/Conv/bias"][None, :, None, None])
    x = lrelu(dense(x.reshape(x.shape[0], -1), v["4x4/Dense0/weight"], v["4x4/Dense0/bias"]))
    out = dense(x, v["Output/weight"], v["Output/bias"])
    if kw["label_size"]:
        cmap = normalize(dense(c, v["LabelEmbed/weight"], v["LabelEmbed/bias"]))
        for i in range(kw["mapping_layers"]):
            cmap = lrelu(dense(cmap, v[f"Mapping{i}/weight"], v[f"Mapping{i}/bias"], lrmul=kw["mapping_lrmul"]))
        out = np.sum(out * cmap, axis=1, keepdims=True) / math.sqrt(cmap.shape[1])
    return out
