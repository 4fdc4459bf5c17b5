"""Tiny R3GAN network snapshots for tests, in the layout of the released code (github.com/brownvc/R3GAN:
training/networks.py wraps the networks of R3GAN/Networks.py, and the training loop pickles them as plain torch
modules), written with stand-in classes, never with R3GAN's code.

Each stand-in is a torch module with the released class name, attribute names and child-module names, so that its
`state_dict()` names are the released ones (loading the reference weights with strict=True checks this). While a
snapshot is pickled, sys.modules holds stand-in modules `training.networks`, `R3GAN.Networks`, ... so that pickle
records the released global names; they are removed afterwards. The stand-ins have no forward pass: the reference
outputs come from the released code: r3gan_reference.safetensors was made by building each configuration its
metadata holds with R3GAN's training/networks.py on CPU (FP16Stages empty, ResamplingFilter and KernelSize as
released), drawing every weight N(0, 1/fan_in) (the released initialisation zeroes each block's last convolution,
which would hide the blocks), and saving the state dicts, three latents and labels, G's images and D's logits on them.
"""

import contextlib
import json
import pickle
import sys
import types
from pathlib import Path
from unittest import mock

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from torch import nn

REFERENCE = Path(__file__).with_name("r3gan_reference.safetensors")
RELEASED = {}  # module name -> {class name: stand-in}


def released(module: str, name: str):
    """Give a stand-in class the released module and name, and list it for `released_names`."""

    def rename(cls):
        cls.__module__, cls.__qualname__, cls.__name__ = module, name, name
        RELEASED.setdefault(module, {})[name] = cls
        return cls

    return rename


@contextlib.contextmanager
def released_names():
    """Stand-in modules holding the stand-in classes under their released names, only while this is entered."""
    modules = {"training": types.ModuleType("training"), "R3GAN": types.ModuleType("R3GAN")}
    for module, classes in RELEASED.items():
        modules[module] = types.ModuleType(module)
        for name, cls in classes.items():
            setattr(modules[module], name, cls)
    with mock.patch.dict(sys.modules, modules):
        yield


def filter_kernel() -> torch.Tensor:
    """The released resamplers' buffer: [1, 2, 1] convolved with [1, 1] is [1, 3, 3, 1]; its outer product, summing
    to 1."""
    taps = torch.tensor([1.0, 3.0, 3.0, 1.0])
    kernel = torch.outer(taps, taps)
    return kernel / kernel.sum()


@released("R3GAN.Networks", "Convolution")
class Convolution(nn.Module):
    def __init__(self, inputs: int, outputs: int, kernel: int, groups: int = 1):
        super().__init__()
        self.Layer = nn.Conv2d(inputs, outputs, kernel, padding=(kernel - 1) // 2, groups=groups, bias=False)


@released("R3GAN.FusedOperators", "BiasedActivationCUDA")
class BiasedActivation(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.Bias = nn.Parameter(torch.zeros(channels))


@released("R3GAN.Networks", "ResidualBlock")
class ResidualBlock(nn.Module):
    def __init__(self, width: int, cardinality: int, expansion: int, kernel: int):
        super().__init__()
        expanded = width * expansion
        self.LinearLayer1 = Convolution(width, expanded, 1)
        self.LinearLayer2 = Convolution(expanded, expanded, kernel, groups=cardinality)
        self.LinearLayer3 = Convolution(expanded, width, 1)
        self.NonLinearity1, self.NonLinearity2 = BiasedActivation(expanded), BiasedActivation(expanded)


@released("R3GAN.Resamplers", "InterpolativeUpsamplerCUDA")
class Upsampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("Kernel", filter_kernel())


@released("R3GAN.Resamplers", "InterpolativeDownsamplerCUDA")
class Downsampler(Upsampler):
    pass


@released("R3GAN.Networks", "UpsampleLayer")
class UpsampleLayer(nn.Module):
    def __init__(self, inputs: int, outputs: int, resampler: type = Upsampler):
        super().__init__()
        self.Resampler = resampler()
        if inputs != outputs:
            self.LinearLayer = Convolution(inputs, outputs, 1)


@released("R3GAN.Networks", "DownsampleLayer")
class DownsampleLayer(UpsampleLayer):
    def __init__(self, inputs: int, outputs: int):
        super().__init__(inputs, outputs, Downsampler)


@released("R3GAN.Networks", "GenerativeBasis")
class GenerativeBasis(nn.Module):
    def __init__(self, inputs: int, width: int):
        super().__init__()
        self.Basis = nn.Parameter(torch.zeros(width, 4, 4))
        self.LinearLayer = nn.Linear(inputs, width, bias=False)


@released("R3GAN.Networks", "DiscriminativeBasis")
class DiscriminativeBasis(nn.Module):
    def __init__(self, width: int, outputs: int):
        super().__init__()
        self.Basis = nn.Conv2d(width, width, 4, groups=width, bias=False)
        self.LinearLayer = nn.Linear(width, outputs, bias=False)


@released("R3GAN.Networks", "GeneratorStage")
class GeneratorStage(nn.Module):
    def __init__(self, transition: nn.Module, blocks: list):
        super().__init__()
        self.Layers = nn.ModuleList([transition, *blocks])
        self.DataType = torch.float32


@released("R3GAN.Networks", "DiscriminatorStage")
class DiscriminatorStage(nn.Module):
    def __init__(self, transition: nn.Module, blocks: list):
        super().__init__()
        self.Layers = nn.ModuleList([*blocks, transition])
        self.DataType = torch.float32


@released("R3GAN.Networks", "Generator")
class NetworksGenerator(nn.Module):
    def __init__(self, cfg: dict, inputs: int):
        super().__init__()
        widths, stages = cfg["widths"], []
        for i, (width, groups, count) in enumerate(zip(widths, cfg["cardinalities"], cfg["blocks"], strict=True)):
            transition = GenerativeBasis(inputs, width) if i == 0 else UpsampleLayer(widths[i - 1], width)
            stages.append(GeneratorStage(transition, [ResidualBlock(width, groups, 2, 3) for _ in range(count)]))
        self.MainLayers = nn.ModuleList(stages)
        self.AggregationLayer = Convolution(widths[-1], 3, 1)
        if cfg["c_dim"]:
            self.EmbeddingLayer = nn.Linear(cfg["c_dim"], cfg["g_embed"], bias=False)


@released("R3GAN.Networks", "Discriminator")
class NetworksDiscriminator(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        widths, groups, blocks = cfg["widths"][::-1], cfg["cardinalities"][::-1], cfg["blocks"][::-1]
        stages = []
        for i, width in enumerate(widths):
            last = i == len(widths) - 1
            transition = (
                DiscriminativeBasis(width, cfg["d_embed"] or 1) if last else DownsampleLayer(width, widths[i + 1])
            )
            stages.append(
                DiscriminatorStage(transition, [ResidualBlock(width, groups[i], 2, 3) for _ in range(blocks[i])])
            )
        self.ExtractionLayer = Convolution(3, widths[0], 1)
        self.MainLayers = nn.ModuleList(stages)
        if cfg["c_dim"]:
            self.EmbeddingLayer = nn.Linear(cfg["c_dim"], cfg["d_embed"], bias=False)


@released("training.networks", "Generator")
class Generator(nn.Module):
    def __init__(self, cfg: dict, inputs: int | None = None):
        super().__init__()
        self.Model = NetworksGenerator(cfg, inputs or cfg["z_dim"] + cfg["g_embed"])
        self.z_dim, self.c_dim, self.img_resolution = cfg["z_dim"], cfg["c_dim"], cfg["resolution"]


@released("training.networks", "Discriminator")
class Discriminator(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.Model = NetworksDiscriminator(cfg)


def reference() -> tuple[dict, dict]:
    """(configurations by name, tensors by name) of r3gan_reference.safetensors: for each configuration "uncond" and
    "cond", the released networks' state dicts ("NAME.G.*", "NAME.D.*"), latents, labels, and the released G's
    images and D's logits on them."""
    with safe_open(REFERENCE, "pt") as file:
        configs = {name: json.loads(text) for name, text in file.metadata().items()}
    return configs, load_file(REFERENCE)


def released_networks(name: str) -> tuple[nn.Module, nn.Module]:
    """Stand-ins of the released G and D of reference configuration `name`, holding the reference weights."""
    configs, tensors = reference()
    G, D = Generator(configs[name]), Discriminator(configs[name])
    for prefix, network in (("G.", G), ("D.", D)):
        state = {
            key.removeprefix(f"{name}.{prefix}"): v for key, v in tensors.items() if key.startswith(name + "." + prefix)
        }
        network.load_state_dict(state, strict=True)
    return G.eval().requires_grad_(False), D.eval().requires_grad_(False)


def optimizer_state(network: nn.Module) -> dict:
    """An Adam state dict as torch writes it (the released snapshot holds G's and D's), for two of the parameters."""
    params = list(network.parameters())[:2]
    state = {i: {"step": torch.tensor(10.0), "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.ones_like(p)}
             for i, p in enumerate(params)}  # fmt: skip
    group = dict(lr=0.002, betas=(0.0, 0.99), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False, foreach=None,
                 capturable=False, differentiable=False, fused=None, params=[0, 1])  # fmt: skip
    return {"state": state, "param_groups": [group]}


def snapshot_bytes(G: nn.Module, D: nn.Module) -> bytes:
    """A released network snapshot: pickle.dump of the training loop's dict. G_ema is G itself (pickle writes it
    once and refers to it), so that nothing in G is copied, a payload planted in a test included."""
    dataset = dict(class_name="training.dataset.ImageFolderDataset", path="data.zip", use_labels=G.c_dim > 0,
                   max_size=10, xflip=False, resolution=G.img_resolution)  # fmt: skip
    data = dict(G=G, D=D, G_ema=G, training_set_kwargs=dataset, cur_nimg=1000)
    data |= {"G_opt_state": optimizer_state(G), "D_opt_state": optimizer_state(D)}
    with released_names():
        return pickle.dumps(data)
