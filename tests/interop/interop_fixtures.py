"""Tiny NVlabs-format network pickles for tests, written from the published format (torch_utils/persistence.py and
training/networks.py of stylegan2-ada-pytorch), never with NVlabs code.

A network module pickles as the call `torch_utils.persistence._reconstruct_persistent_obj(meta)`, meta = {type:
"class", version: 6, module_src: the defining module's source, class_name, state: the module's __dict__}; the file is
`pickle.dump` of {G, D, G_ema, augment_pipe, training_set_kwargs}. Stand-ins below carry the official global names
while a pickle is written (sys.modules holds stand-in modules only for that time), so the byte stream names exactly
the globals of a real file; tensors are real torch tensors and parameters, pickled by torch itself, and the layers'
numpy attributes real numpy values, pickled by numpy (under numpy 2's module names; fixtures/ holds pickles written
by NVlabs' own StyleGAN3 code under numpy 1.x).
"""

import collections
import contextlib
import pickle
import sys
import types
from unittest import mock

import numpy as np
import torch

from ganforge.nets.layers import fir_kernel

# Official classes that register the FIR filter as a persistent buffer (ganforge recomputes it instead).
RESAMPLE_FILTER_OWNERS = ("SynthesisLayer", "SynthesisBlock", "Conv2dLayer", "DiscriminatorBlock")
HOOK_DICTS = ("_backward_hooks", "_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks",
              "_load_state_dict_pre_hooks")  # fmt: skip


def module_source(marker) -> str:
    """A stand-in for the pickled source of training/networks.py: running it would create `marker`."""
    return f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"


def _reconstruct_persistent_obj(meta):
    raise AssertionError("a stand-in: only its name is written into fixture pickles")


_reconstruct_persistent_obj.__module__ = "torch_utils.persistence"


class EasyDict(dict):
    """Stand-in for dnnlib.util.EasyDict (an attribute dict)."""


EasyDict.__module__ = "dnnlib.util"


class Persistent:
    """Pickles as an NVlabs persistent object of class `class_name` with the given `__dict__`."""

    def __init__(self, class_name: str, state: dict, source: str = ""):
        self.class_name, self.state, self.source = class_name, state, source

    def __reduce__(self):
        meta = dict(type="class", version=6, module_src=self.source, class_name=self.class_name, state=self.state)
        return _reconstruct_persistent_obj, (meta,)


@contextlib.contextmanager
def official_names():
    """Stand-in modules torch_utils.persistence and dnnlib.util, so pickle writes the official global names."""
    persistence = types.ModuleType("torch_utils.persistence")
    persistence._reconstruct_persistent_obj = _reconstruct_persistent_obj
    util = types.ModuleType("dnnlib.util")
    util.EasyDict = EasyDict
    modules = {"torch_utils": types.ModuleType("torch_utils"), "torch_utils.persistence": persistence,
               "dnnlib": types.ModuleType("dnnlib"), "dnnlib.util": util}  # fmt: skip
    with mock.patch.dict(sys.modules, modules):
        yield


def persistent_tree(module: torch.nn.Module, init_kwargs: dict, source: str = "", class_name: str | None = None,
                    resample_filters: bool = True) -> Persistent:  # fmt: skip
    """The official object graph of a ganforge module tree (same module names and class names as the official
    networks, or `class_name` for the top one), with the official extras: persistent StyleGAN2 resample filters
    (`resample_filters` False for StyleGAN3, whose filters are the modules' own buffers), numpy gains, init kwargs,
    hook dicts."""
    class_name = class_name or type(module).__name__
    params = collections.OrderedDict(
        (name, torch.nn.Parameter(p.detach().clone(), requires_grad=False))
        for name, p in module._parameters.items()
        if p is not None
    )
    buffers = collections.OrderedDict(
        (name, None if b is None else b.detach().clone())  # StyleGAN3 keeps None for filters a layer lacks
        for name, b in module._buffers.items()
        if name not in module._non_persistent_buffers_set
    )
    if resample_filters and class_name in RESAMPLE_FILTER_OWNERS:
        buffers["resample_filter"] = fir_kernel()
    children = collections.OrderedDict((n, persistent_tree(c, {}, source, resample_filters=resample_filters))
                                       for n, c in module._modules.items())  # fmt: skip
    state = {"training": False, "_parameters": params, "_buffers": buffers, "_non_persistent_buffers_set": set(),
             "_modules": children, "_init_args": (), "_init_kwargs": init_kwargs,
             **{hooks: collections.OrderedDict() for hooks in HOOK_DICTS}}  # fmt: skip
    state.update(official_attributes(class_name, module))
    return Persistent(class_name, state, source)


def _size_pair(size: int) -> np.ndarray:
    """A StyleGAN3 layer's [width, height] as its official class keeps it after the training loop's deep copy (a
    contiguous int64 array: numpy pickles it as _reconstruct + BUILD, or _frombuffer under protocol 5)."""
    return np.array([size, size], dtype=np.int64)


def official_attributes(class_name: str, module: torch.nn.Module) -> dict:
    """The plain and numpy attributes an official layer keeps beside its tensors, by the official constructors:
    numpy float gains, StyleGAN3's sampling rates and cutoffs as numpy floats, its sizes as numpy arrays."""
    if class_name == "FullyConnectedLayer":  # np.sqrt gains
        return dict(activation=module.activation, weight_gain=np.float64(module.weight_gain), bias_gain=1)
    if class_name == "SynthesisInput":
        band = module.band
        return dict(w_dim=module.affine.weight.shape[1], channels=band.channels, size=_size_pair(band.size),
                    sampling_rate=np.float64(band.sampling_rate), bandwidth=np.float64(band.cutoff))  # fmt: skip
    if class_name == "SynthesisLayer" and hasattr(module, "inp"):  # StyleGAN3's (StyleGAN2's has no bands)
        inp, out = module.inp, module.out
        return dict(w_dim=module.affine.weight.shape[1], is_torgb=module.is_torgb,
                    is_critically_sampled=module.critically_sampled, use_fp16=np.bool_(module.use_fp16),
                    in_channels=inp.channels, out_channels=out.channels, in_size=_size_pair(inp.size),
                    out_size=_size_pair(out.size), in_sampling_rate=inp.sampling_rate,
                    out_sampling_rate=out.sampling_rate, in_cutoff=np.float64(inp.cutoff),
                    out_cutoff=np.float64(out.cutoff), in_half_width=np.float64(inp.half_width),
                    out_half_width=np.float64(out.half_width), conv_kernel=module.conv_kernel,
                    conv_clamp=module.conv_clamp, up_factor=module.up, down_factor=module.down,
                    down_radial=module.down_radial, padding=list(module.padding))  # fmt: skip
    return {}


def generator_kwargs(G, layout: str = "ada", **synthesis_extra) -> dict:
    """Official Generator constructor kwargs for ganforge G's architecture: stylegan2-ada-pytorch nests the synthesis
    settings in synthesis_kwargs; stylegan3's networks_stylegan2 takes them at the top level."""
    a = G.config
    common = dict(z_dim=a["z_dim"], w_dim=a["w_dim"], c_dim=a["c_dim"], img_resolution=a["resolution"],
                  img_channels=a["img_channels"], mapping_kwargs=EasyDict(num_layers=a["mapping_layers"]))  # fmt: skip
    synthesis = EasyDict(channel_base=a["channel_base"], channel_max=a["channel_max"],
                         num_fp16_res=a["num_fp16_res"], conv_clamp=a["conv_clamp"], architecture=a["architecture"],
                         **synthesis_extra)  # fmt: skip
    if layout == "ada":
        return dict(common, synthesis_kwargs=synthesis)
    return dict(common, **synthesis, fused_modconv_default="inference_only")


def discriminator_kwargs(D, **extra) -> dict:
    a = D.config
    kwargs = dict(c_dim=a["c_dim"], img_resolution=a["resolution"], img_channels=a["img_channels"],
                  channel_base=a["channel_base"], channel_max=a["channel_max"], num_fp16_res=a["num_fp16_res"],
                  conv_clamp=a["conv_clamp"], architecture=a["architecture"], block_kwargs=EasyDict(freeze_layers=0),
                  mapping_kwargs=EasyDict(),
                  epilogue_kwargs=EasyDict(mbstd_group_size=a["mbstd_group_size"]))  # fmt: skip
    return {**kwargs, **extra}


def network_pickle(networks: dict, protocol: int = 4, augment_p: float = 0.0) -> bytes:
    """pickle.dump of an NVlabs snapshot dict; `networks` maps G / D / G_ema to Persistent trees (or anything);
    `augment_p`: the AugmentPipe's p (ADA's strength when the snapshot was written)."""
    p = torch.tensor(augment_p)
    augment = Persistent("AugmentPipe", {"_parameters": {}, "_buffers": {"p": p}, "_modules": {}})
    data = dict(training_set_kwargs=dict(path="data.zip", resolution=8, use_labels=False), augment_pipe=augment)
    with official_names():
        return pickle.dumps({**data, **networks}, protocol=protocol)


def random_weights(net: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Fill every parameter and buffer with random values (noise strengths and biases too, so each matters)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in net.state_dict(keep_vars=True).values():  # not the recomputed FIR filters
            tensor.copy_(torch.randn(tensor.shape, generator=generator) * 0.5)
    return net.eval()
