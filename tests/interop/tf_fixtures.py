"""Tiny TensorFlow-era NVlabs network pickles for tests, written from the published format (dnnlib/tflib/network.py
and training/networks_stylegan2.py of NVlabs' stylegan2, training/networks.py of stylegan2-ada), never with NVlabs
code, and without TensorFlow.

A file is `pickle.dump((G, D, Gs))` of `dnnlib.tflib.network.Network` objects: NEWOBJ of the class, then BUILD with
the state its `__getstate__` returns (version, name, static_kwargs, components, build_module_src, build_func_name,
variables, and in version 5 the input and output shapes and names). Variables are numpy arrays as numpy 1.x pickled
them (`numpy.core.multiarray._reconstruct`, `numpy.dtype`, `numpy.core.multiarray.scalar` for 0-d ones), under TF's
names and layouts. Stand-in classes and functions carry the official global names while a pickle is written, so the
byte stream names exactly the globals of a real file.

`tf_generator` and `tf_discriminator` write the variables of a ganforge network the way TensorFlow's layers hold
them; `tf_variables` writes random ones from an architecture alone (for the reference test, which never goes
through a ganforge network).
"""

import contextlib
import math
import pickle
import sys
import types
from unittest import mock

import numpy as np

G_MAIN_PARAMETERS = ("truncation_psi", "truncation_cutoff", "truncation_psi_val", "truncation_cutoff_val",
                     "dlatent_avg_beta", "style_mixing_prob", "mapping_func", "synthesis_func")  # fmt: skip
LAYOUTS = {  # build functions and Network version of each release
    "stylegan2": dict(version=4, synthesis="G_synthesis_stylegan2", D="D_stylegan2"),
    "ada": dict(version=5, synthesis="G_synthesis", D="D_main"),
}


def _reconstruct(cls, shape, code):
    raise AssertionError("a stand-in: only its name is written into fixture pickles")


def _scalar(dtype, data):
    raise AssertionError("a stand-in: only its name is written into fixture pickles")


class Network:
    """Stand-in for dnnlib.tflib.network.Network: pickles as NEWOBJ + BUILD(state)."""

    def __init__(self, state: dict):
        self._state = state

    def __getstate__(self):
        return self._state


Network.__module__ = "dnnlib.tflib.network"
_reconstruct.__module__ = _scalar.__module__ = "numpy.core.multiarray"
_scalar.__qualname__ = "scalar"


class Array:
    """A numpy array as numpy 1.x pickles it (a numpy scalar when 0-d, as TensorFlow returns 0-d variables)."""

    def __init__(self, value):
        self.value = np.array(value, dtype=np.float32, order="C")

    def __reduce__(self):
        if self.value.ndim == 0:
            return _scalar, (self.value.dtype, self.value.tobytes())
        return _reconstruct, (np.ndarray, (0,), b"b"), (1, self.value.shape, self.value.dtype, False,
                                                         self.value.tobytes())  # fmt: skip


@contextlib.contextmanager
def official_names():
    """Stand-in modules dnnlib.tflib.network and numpy.core.multiarray while a pickle is written."""
    network = types.ModuleType("dnnlib.tflib.network")
    network.Network = Network
    multiarray = types.ModuleType("numpy.core.multiarray")
    multiarray._reconstruct, multiarray.scalar = _reconstruct, _scalar
    modules = {"dnnlib": types.ModuleType("dnnlib"), "dnnlib.tflib": types.ModuleType("dnnlib.tflib"),
               "dnnlib.tflib.network": network, "numpy.core.multiarray": multiarray}  # fmt: skip
    with mock.patch.dict(sys.modules, modules):
        yield


def network(name: str, func: str, kwargs: dict, variables: dict, components=None, version=4, source="") -> Network:
    """A Network with the state dnnlib's __getstate__ writes."""
    state = dict(version=version, name=name, static_kwargs=dict(kwargs), components=dict(components or {}),
                 build_module_src=source, build_func_name=func,
                 variables=[(k, Array(v)) for k, v in variables.items()])  # fmt: skip
    if version == 5:
        state.update(input_shapes=[[None, 1]], output_shapes=[[None, 1]], input_names=["x"], output_names=["y"])
    return Network(state)


def tf_pickle(G: Network, D: Network, Gs: Network, protocol: int = 4) -> bytes:
    with official_names():
        return pickle.dumps((G, D, Gs), protocol=protocol)


# --- the TF layout of a ganforge network's tensors ----------------------------------------------------------------


def _conv(weight, up=False):
    """[out, in, kh, kw] -> TF's [kh, kw, in, out]; an upsampling conv's kernel is stored flipped (TF's transposed
    convolution flips it back)."""
    tf = weight.transpose(2, 3, 1, 0)
    return tf[::-1, ::-1] if up else tf


def _modulated(out: dict, scope: str, sd: dict, key: str, up=False) -> None:
    out[f"{scope}/weight"] = _conv(sd[f"{key}.weight"], up)
    out[f"{scope}/mod_weight"] = sd[f"{key}.affine.weight"].T
    out[f"{scope}/mod_bias"] = sd[f"{key}.affine.bias"] - 1  # TF adds the 1 when it runs
    if f"{key}.noise_strength" in sd:
        out[f"{scope}/noise_strength"] = sd[f"{key}.noise_strength"]
    out[f"{scope}/bias"] = sd[f"{key}.bias"]


def generator_variables(G) -> tuple[dict, dict, dict]:
    """(G's own, G_mapping's, G_synthesis's) variables holding ganforge Generator G's tensors, by TF local name."""
    sd = {k: v.detach().double().numpy() for k, v in G.state_dict().items()}
    mapping = {}
    if G.c_dim:
        mapping |= {"LabelEmbed/weight": sd["mapping.embed.weight"].T, "LabelEmbed/bias": sd["mapping.embed.bias"]}
    for i in range(G.mapping.num_layers):
        mapping |= {f"Dense{i}/weight": sd[f"mapping.fc{i}.weight"].T, f"Dense{i}/bias": sd[f"mapping.fc{i}.bias"]}
    synthesis = {"4x4/Const/const": sd["synthesis.b4.const"][None]}
    _modulated(synthesis, "4x4/Conv", sd, "synthesis.b4.conv1")
    log2 = int(math.log2(G.resolution))
    for res in range(2, log2 + 1):
        scope, key = f"{2**res}x{2**res}", f"synthesis.b{2**res}"
        if res > 2:
            _modulated(synthesis, f"{scope}/Conv0_up", sd, f"{key}.conv0", up=True)
            _modulated(synthesis, f"{scope}/Conv1", sd, f"{key}.conv1")
        if f"{key}.torgb.weight" in sd:  # every block of a skip G, the last one of the others
            _modulated(synthesis, f"{scope}/ToRGB", sd, f"{key}.torgb")
        if f"{key}.skip.weight" in sd:  # a resnet G's upsampling 1x1 conv
            synthesis[f"{scope}/Skip/weight"] = _conv(sd[f"{key}.skip.weight"], up=True)
    # TF's noise inputs are numbered by layer index: 0 is the 4x4 conv, then res * 2 - 5 and res * 2 - 4
    for layer in range(2 * log2 - 3):
        res = (layer + 5) // 2
        key = "synthesis.b4.conv1" if layer == 0 else f"synthesis.b{2**res}.conv{(layer + 1) % 2}"
        synthesis[f"noise{layer}"] = sd[f"{key}.noise_const"][None, None]
    return {"dlatent_avg": sd["mapping.w_avg"]}, mapping, synthesis


def discriminator_variables(D) -> dict:
    """D's variables holding ganforge Discriminator D's tensors, by TF local name."""
    sd = {k: v.detach().double().numpy() for k, v in D.state_dict().items()}
    out = {}
    for res in (*D.block_resolutions, 4):
        key = f"b{res}"
        if f"{key}.fromrgb.weight" in sd:  # the top block, or every block and the head of a skip D
            out |= {f"{res}x{res}/FromRGB/weight": _conv(sd[f"{key}.fromrgb.weight"]),
                    f"{res}x{res}/FromRGB/bias": sd[f"{key}.fromrgb.bias"]}  # fmt: skip
        if res == 4:
            break
        for tf_layer, layer in (("Conv0", "conv0"), ("Conv1_down", "conv1")):
            out |= {f"{res}x{res}/{tf_layer}/weight": _conv(sd[f"{key}.{layer}.weight"]),
                    f"{res}x{res}/{tf_layer}/bias": sd[f"{key}.{layer}.bias"]}  # fmt: skip
        if f"{key}.skip.weight" in sd:
            out[f"{res}x{res}/Skip/weight"] = _conv(sd[f"{key}.skip.weight"])
    out |= {"4x4/Conv/weight": _conv(sd["b4.conv.weight"]), "4x4/Conv/bias": sd["b4.conv.bias"],
            "4x4/Dense0/weight": sd["b4.fc.weight"].T, "4x4/Dense0/bias": sd["b4.fc.bias"],
            "Output/weight": sd["b4.out.weight"].T, "Output/bias": sd["b4.out.bias"]}  # fmt: skip
    if D.c_dim:
        out |= {"LabelEmbed/weight": sd["mapping.embed.weight"].T, "LabelEmbed/bias": sd["mapping.embed.bias"]}
        for i in range(8):
            out |= {f"Mapping{i}/weight": sd[f"mapping.fc{i}.weight"].T, f"Mapping{i}/bias": sd[f"mapping.fc{i}.bias"]}
    return out


def generator_kwargs(G, layout: str) -> dict:
    """G's static kwargs as each release's training script records them (the sizes ganforge networks here differ
    from the defaults in, so they are given)."""
    a = G.config
    kwargs = dict(num_channels=a["img_channels"], resolution=a["resolution"], label_size=a["c_dim"],
                  latent_size=a["z_dim"], dlatent_size=a["w_dim"], fmap_base=a["channel_base"] // 2,
                  fmap_max=a["channel_max"], mapping_layers=a["mapping_layers"])  # fmt: skip
    kwargs |= {} if a["architecture"] == "skip" else dict(architecture=a["architecture"])
    if layout == "stylegan2":  # stylegan2's G_mapping defaults to 512 hidden features whatever dlatent_size
        return kwargs | dict(mapping_fmaps=a["w_dim"])
    return kwargs | dict(num_fp16_res=a["num_fp16_res"], conv_clamp=a["conv_clamp"], style_mixing_prob=0.9)


def tf_generator(G, layout: str = "ada", name: str = "Gs", kwargs=None, source: str = "") -> Network:
    """G as a TF G_main network with its mapping and synthesis components, in `layout` (stylegan2 or ada)."""
    spec = LAYOUTS[layout]
    own, mapping, synthesis = generator_variables(G)
    if layout == "stylegan2":
        own = {"lod": np.float32(0), **own}
    kwargs = generator_kwargs(G, layout) if kwargs is None else kwargs
    passed = {k: v for k, v in kwargs.items() if k not in G_MAIN_PARAMETERS}
    components = {
        "synthesis": network("G_synthesis", spec["synthesis"], passed, synthesis, version=spec["version"],
                             source=source),
        "mapping": network("G_mapping", "G_mapping", passed | {"dlatent_broadcast": G.num_ws}, mapping,
                           version=spec["version"], source=source),
    }  # fmt: skip
    return network(name, "G_main", kwargs, own, components, spec["version"], source)


def discriminator_kwargs(D, layout: str) -> dict:
    a = D.config
    kwargs = dict(num_channels=a["img_channels"], resolution=a["resolution"], label_size=a["c_dim"],
                  fmap_base=a["channel_base"] // 2, fmap_max=a["channel_max"],
                  mbstd_group_size=a["mbstd_group_size"])  # fmt: skip
    kwargs |= {} if a["architecture"] == "resnet" else dict(architecture=a["architecture"])
    if a["c_dim"]:
        kwargs |= dict(mapping_layers=8, mapping_lrmul=0.01)
    if layout == "ada":
        kwargs |= dict(num_fp16_res=a["num_fp16_res"], conv_clamp=a["conv_clamp"])
    return kwargs


def tf_discriminator(D, layout: str = "ada", kwargs=None, source: str = "") -> Network:
    spec = LAYOUTS[layout]
    kwargs = discriminator_kwargs(D, layout) if kwargs is None else kwargs
    return network("D", spec["D"], kwargs, discriminator_variables(D), version=spec["version"], source=source)
