"""TensorFlow-era StyleGAN2 networks (NVlabs stylegan2, configs E and F and every `architecture` of their G and D;
stylegan2-ada in TensorFlow), read as data by `tf_pickle`, -> ganforge Generator / Discriminator.

Each TF network is built by a function of NVlabs' `training/networks_stylegan2.py` (stylegan2) or
`training/networks.py` (stylegan2-ada) from its recorded `static_kwargs`; G_main hands its own to both components,
and each function ignores the arguments it does not take. The settings are read where TensorFlow reads them: the
mapping network's from its own static_kwargs, the synthesis network's from its own, the discriminator's from D's.
Settings ganforge implements only in their default form must have it (all offending ones listed at once); sizes
that only the tensor shapes tell apart (hidden widths, embedding width, minimum channels) are left to the shape
check. Variables map to ganforge tensors as docs/official-tensor-mapping.md lists: dense weights are [in, out],
convolutions [kh, kw, in, out] (the upsampling ones flipped, since TF's transposed convolution flips its kernel), a
style bias is stored less the 1 TF adds when it runs, the constant and the noise carry leading 1s.
"""

from pathlib import Path

import numpy as np
import torch

from ganforge.errors import UserError
from ganforge.interop.numpy_pickle import ArrayRecord
from ganforge.interop.official import ANY, FIR, IGNORE, settings
from ganforge.interop.tensors import build_network, network_shapes
from ganforge.interop.tf_pickle import TFNet
from ganforge.limits import ARCHITECTURES, shown, shown_name
from ganforge.nets import Discriminator, Generator
from ganforge.snapshot import listed

LRELU = ("lrelu", ["lrelu"])
FLOAT32 = ("float32", ["float32"])
G_MAIN_RULES = {  # run-time and training choices: ganforge takes them per call (--trunc) or at training
    "truncation_psi": IGNORE,
    "truncation_cutoff": IGNORE,
    "truncation_psi_val": IGNORE,
    "truncation_cutoff_val": IGNORE,
    "dlatent_avg_beta": IGNORE,
    "w_avg_beta": IGNORE,
    "style_mixing_prob": IGNORE,
    "mapping_func": IGNORE,  # the components' own build functions are checked instead
    "synthesis_func": IGNORE,
}
MAPPING_RULES = {
    "latent_size": (512, ANY),
    "label_size": (0, ANY),
    "dlatent_size": (512, ANY),
    "dlatent_broadcast": IGNORE,  # G_main sets it to the synthesis network's number of ws
    "mapping_layers": (8, ANY),
    "mapping_fmaps": (None, ANY),
    "label_fmaps": (None, ANY),
    "mapping_lrmul": (0.01, [0.01]),
    "mapping_nonlinearity": LRELU,
    "normalize_latents": (True, [True]),
    "dtype": FLOAT32,
}
CHANNELS = {"fmap_base": (16384, ANY), "fmap_max": (512, ANY), "fmap_decay": (1, [1]), "fmap_min": (1, ANY)}
COMMON = {**CHANNELS, "resolution": (1024, ANY), "num_channels": (3, ANY), "num_fp16_res": (0, ANY),
          "conv_clamp": (None, ANY), "nonlinearity": LRELU, "resample_kernel": (FIR, [FIR]), "dtype": FLOAT32,
          "structure": IGNORE}  # fmt: skip
SYNTHESIS_RULES = {
    **COMMON,
    "dlatent_size": (512, ANY),
    "fmap_const": (None, ANY),
    "architecture": ("skip", list(ARCHITECTURES)),
    "use_noise": (True, [True]),
    "randomize_noise": IGNORE,  # ganforge's noise_mode
    "fused_modconv": IGNORE,  # the same maths grouped or not
}
D_RULES = {
    **COMMON,
    "label_size": (0, ANY),
    "architecture": ("resnet", list(ARCHITECTURES)),
    "mbstd_group_size": (4, ANY),  # stylegan2's default; stylegan2-ada's train.py always records it
    "mbstd_num_features": (1, [1]),
    "mapping_layers": (0, ANY),  # the label mapping: checked below, where there is a label
    "mapping_fmaps": (None, ANY),
    "mapping_lrmul": (0.1, ANY),
    "freeze_layers": IGNORE,
    "augment_strength": IGNORE,
    "use_pagan": (False, [False]),
    "pagan_num": IGNORE,
    "pagan_fade": IGNORE,
    "score_size": (1, [1]),
    "score_max": (1, [1]),
    "use_spectral_norm": (False, [False]),
    "adaptive_dropout": (0, [0]),
}
G_KEYS = {*G_MAIN_RULES, *MAPPING_RULES, *SYNTHESIS_RULES}
BUILD_FUNCTIONS = {"G": ("G_main",), "mapping": ("G_mapping",), "synthesis": ("G_synthesis_stylegan2", "G_synthesis"),
                   "D": ("D_stylegan2", "D_main")}  # fmt: skip
LABEL_CONCAT = "mapping/LabelConcat/weight"
OPTIONAL = ("lod",)  # stylegan2's G keeps the progressive-growing level; without growing it changes nothing

# How a variable becomes a tensor: (its TF shape from the tensor's, the conversion).
TRANSFORMS = {
    "as_is": (lambda s: s, lambda t: t),
    "dense": (lambda s: (s[1], s[0]), lambda t: t.T),  # [in, out] -> [out, in]
    "conv": (lambda s: (s[2], s[3], s[1], s[0]), lambda t: t.permute(3, 2, 0, 1)),  # [kh, kw, in, out] -> [o, i, ...]
    "up_conv": (lambda s: (s[2], s[3], s[1], s[0]), lambda t: t.flip(0, 1).permute(3, 2, 0, 1)),
    "mod_bias": (lambda s: s, lambda t: t + 1),
    "const": (lambda s: (1, *s), lambda t: t[0]),
    "noise": (lambda s: (1, 1, *s), lambda t: t[0, 0]),
}
LAYER_FIELDS = {"weight": ("weight", "conv"), "bias": ("bias", "as_is"), "noise_strength": ("noise_strength", "as_is"),
                "affine.weight": ("mod_weight", "dense"), "affine.bias": ("mod_bias", "mod_bias")}  # fmt: skip
D_LAYERS = {"fromrgb": "FromRGB", "conv0": "Conv0", "conv1": "Conv1_down", "skip": "Skip"}
D_HEAD = {"fromrgb": ("4x4/FromRGB", "conv"), "conv": ("4x4/Conv", "conv"), "fc": ("4x4/Dense0", "dense"),
          "out": ("Output", "dense")}  # fmt: skip


def generator_variable(key: str) -> tuple[str, str]:
    """(TF variable, transform) that holds ganforge Generator tensor `key` (the TF names of G_main's tree)."""
    parts = key.split(".")
    if key == "mapping.w_avg":
        return "dlatent_avg", "as_is"
    if parts[0] == "mapping":  # mapping.embed.weight, mapping.fc3.bias
        layer = "LabelEmbed" if parts[1] == "embed" else f"Dense{parts[1][2:]}"
        return f"mapping/{layer}/{parts[2]}", "dense" if parts[2] == "weight" else "as_is"
    res, layer, field = int(parts[1][1:]), parts[2], ".".join(parts[3:])
    if layer == "const":
        return "synthesis/4x4/Const/const", "const"
    if field == "noise_const":  # TF numbers the noise inputs by layer: 0 for 4x4, then two per resolution
        index = 0 if res == 4 else 2 * int(np.log2(res)) - (5 if layer == "conv0" else 4)
        return f"synthesis/noise{index}", "noise"
    if layer == "skip":  # a residual G's 1x1 upsampling convolution (no bias, no modulation)
        return f"synthesis/{res}x{res}/Skip/weight", "up_conv"
    scope = {"conv0": "Conv0_up", "conv1": "Conv1" if res > 4 else "Conv", "torgb": "ToRGB"}[layer]
    name, transform = LAYER_FIELDS[field]
    return f"synthesis/{res}x{res}/{scope}/{name}", "up_conv" if (layer, field) == ("conv0", "weight") else transform


def discriminator_variable(key: str) -> tuple[str, str]:
    """(TF variable, transform) that holds ganforge Discriminator tensor `key`."""
    parts = key.split(".")
    if parts[0] == "mapping":  # the label embedding: mapping.embed.weight, mapping.fc3.bias
        layer = "LabelEmbed" if parts[1] == "embed" else f"Mapping{parts[1][2:]}"
        return f"{layer}/{parts[2]}", "dense" if parts[2] == "weight" else "as_is"
    block, layer, field = parts
    if block == "b4":
        scope, transform = D_HEAD[layer]
    else:
        scope, transform = f"{block[1:]}x{block[1:]}/{D_LAYERS[layer]}", "conv"
    return f"{scope}/{field}", transform if field == "weight" else "as_is"


def read_tf_generator(path: Path, G: TFNet) -> tuple[Generator, dict]:
    """A ganforge Generator equal to a TensorFlow StyleGAN2 G (or Gs), and the architecture it was built from."""
    _check_functions(path, G, "G", ("mapping", "synthesis"))
    arch = generator_arch(path, G)
    variables = {**G.variables}
    for role in ("mapping", "synthesis"):
        variables.update({f"{role}/{name}": value for name, value in G.components[role].variables.items()})
    if LABEL_CONCAT in variables:
        raise UserError(
            f"{path}: {G.role} is a conditional generator of the original TensorFlow StyleGAN2 ({LABEL_CONCAT}): its "
            "label embedding has no bias and is normalized together with z, which ganforge's (stylegan2-ada's "
            "LabelEmbed) is not; unconditional and stylegan2-ada generators are read"
        )
    tensors = _tensors(path, G.role, Generator, arch, variables, generator_variable)
    return build_network(path, Generator, arch, tensors), arch


def read_tf_discriminator(path: Path, D: TFNet) -> tuple[Discriminator, dict]:
    """A ganforge Discriminator equal to a TensorFlow StyleGAN2 D, and its architecture."""
    _check_functions(path, D, "D", ())
    arch = discriminator_arch(path, D)
    tensors = _tensors(path, D.role, Discriminator, arch, D.variables, discriminator_variable)
    return build_network(path, Discriminator, arch, tensors), arch


def _check_functions(path: Path, net: TFNet, kind: str, roles: tuple) -> None:
    """UserError unless `net` (a G or a D: `kind`) and its components (exactly `roles`) are built by StyleGAN2's
    functions."""
    if sorted(net.components) != sorted(roles):
        held = ", ".join(shown_name(r) for r in net.components) or "none"
        raise UserError(f"{path}: {net.role} has components {held}; StyleGAN2's has {', '.join(roles) or 'none'}")
    for role, network in ((kind, net), *((r, net.components[r]) for r in roles)):
        if network.build_func_name not in BUILD_FUNCTIONS[role]:
            raise UserError(
                f"{path}: {network.role} is built by {shown_name(network.build_func_name)}, not StyleGAN2's "
                f"{' or '.join(BUILD_FUNCTIONS[role])}; ganforge reads StyleGAN2 networks (configs E and F, "
                "stylegan2-ada), not StyleGAN 1's nor configs A-D (progressive growing)"
            )


def _kwargs(network: TFNet) -> dict:
    """The static kwargs, numpy scalars (which a script may have passed) as Python numbers."""

    def plain(value):
        array = value.array if type(value) is ArrayRecord else None
        return array.item() if array is not None and array.ndim == 0 else value

    return {name: plain(value) for name, value in network.static_kwargs.items()}


def _own_rules(rules: dict, known: set) -> dict:
    """`rules`, with every other argument of the functions that share the kwargs ignored (each takes its own)."""
    return {**{name: IGNORE for name in known}, **rules}


def generator_arch(path: Path, G: TFNet) -> dict:
    """ganforge Generator kwargs from a TF G's and its components' static kwargs; UserError listing every problem."""
    problems = []
    settings(f"{path}: ", _kwargs(G), _own_rules(G_MAIN_RULES, G_KEYS), problems)
    mapping = settings(f"{path}: ", _kwargs(G.components["mapping"]), _own_rules(MAPPING_RULES, G_KEYS), problems)
    synthesis = settings(f"{path}: ", _kwargs(G.components["synthesis"]), _own_rules(SYNTHESIS_RULES, G_KEYS), problems)
    if mapping["dlatent_size"] != synthesis["dlatent_size"]:
        problems.append(
            f"{path}: dlatent_size: the mapping network's {shown(mapping['dlatent_size'])} and the synthesis "
            f"network's {shown(synthesis['dlatent_size'])} differ"
        )
    problems = list(dict.fromkeys(problems))  # a setting no function takes is in all three networks' kwargs
    if problems:
        raise UserError(*listed("", problems, f"{path}: "))
    return dict(
        resolution=synthesis["resolution"],
        img_channels=synthesis["num_channels"],
        c_dim=mapping["label_size"],
        z_dim=mapping["latent_size"],
        w_dim=mapping["dlatent_size"],
        channel_base=_doubled(synthesis["fmap_base"]),
        channel_max=synthesis["fmap_max"],
        mapping_layers=mapping["mapping_layers"],
        num_fp16_res=synthesis["num_fp16_res"],
        conv_clamp=synthesis["conv_clamp"],
        architecture=synthesis["architecture"],
    )


def discriminator_arch(path: Path, D: TFNet) -> dict:
    """ganforge Discriminator kwargs from a TF D's static kwargs; UserError listing every problem."""
    problems = []
    given = settings(f"{path}: ", _kwargs(D), D_RULES, problems)
    if given["mbstd_group_size"] is None:
        problems.append(f"{path}: mbstd_group_size=None (the whole minibatch) is not supported")
    label_mapping = (given["mapping_layers"], given["mapping_lrmul"])
    if given["label_size"] and label_mapping != (8, 0.01):
        problems.append(
            f"{path}: a conditional discriminator with mapping_layers={shown(label_mapping[0])}, mapping_lrmul="
            f"{shown(label_mapping[1])}: ganforge embeds the label with 8 layers at 0.01, as the PyTorch StyleGAN2"
        )
    if problems:
        raise UserError(*listed("", problems, f"{path}: "))
    return dict(
        resolution=given["resolution"],
        img_channels=given["num_channels"],
        c_dim=given["label_size"],
        channel_base=_doubled(given["fmap_base"]),
        channel_max=given["fmap_max"],
        mbstd_group_size=given["mbstd_group_size"],
        num_fp16_res=given["num_fp16_res"],
        conv_clamp=given["conv_clamp"],
        architecture=given["architecture"],
    )


def _doubled(fmap_base):
    """ganforge's channel_base: TF has nf(stage) = fmap_base / 2^stage at 2^(stage + 1) px, ganforge base / res. A
    value that is not an integer is kept for the architecture check to report."""
    return 2 * fmap_base if type(fmap_base) is int else fmap_base


def _tensors(path: Path, role: str, network: type, arch: dict, variables: dict, source) -> dict:
    """ganforge tensors of `network(**arch)` from TF `variables`, where `source(key)` names the variable holding
    each and how it converts; UserError listing every missing, unexpected, misshapen or non-float variable."""
    shapes = network_shapes(path, network, arch)
    wanted = {key: source(key) for key in shapes}
    needed = {name: (key, transform) for key, (name, transform) in wanted.items()}
    problems = [f"missing variable {name}" for name in needed if name not in variables]
    problems += [f"unexpected variable {shown_name(n)}" for n in variables if n not in needed and n not in OPTIONAL]
    for name, (key, transform) in needed.items():
        value, expected = variables.get(name), TRANSFORMS[transform][0](shapes[key])
        if value is not None and value.dtype.kind != "f":
            problems.append(f"variable {name} holds {value.dtype} values, not floating-point numbers")
        elif value is not None and value.shape != expected:
            problems.append(
                f"variable {name} has shape {shown(list(value.shape))}, the architecture needs {list(expected)}"
            )
    if problems:
        raise UserError(*listed(f"{path}: {role}: architecture mismatch, ", problems))
    return {
        key: TRANSFORMS[t][1](torch.from_numpy(np.array(variables[n], np.float32))) for n, (key, t) in needed.items()
    }
