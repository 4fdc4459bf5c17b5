"""Read TensorFlow-era NVlabs network pickles (StyleGAN2 and StyleGAN2-ADA in TensorFlow) as data: no TensorFlow, and
nothing from the file is executed.

The format (`dnnlib/tflib/network.py` of NVlabs' stylegan2 and stylegan2-ada): a file is `pickle.dump((G, D, Gs))`;
each network is a `dnnlib.tflib.network.Network`, which pickles as NEWOBJ of that class and BUILD with the dict its
`__getstate__` returns:

    version           4 (stylegan2) or 5 (stylegan2-ada)
    name              "G", "D", "Gs", "G_mapping", "G_synthesis"
    static_kwargs     the keyword arguments of its build function (resolution, fmap_base, mapping_layers, ...)
    components        its sub-networks by role: G and Gs hold "mapping" and "synthesis"; the others none
    build_module_src  the Python source of the module defining the build function (NVlabs' loader exec()s it)
    build_func_name   G_main, G_mapping, G_synthesis_stylegan2 or G_synthesis, D_stylegan2 or D_main
    variables         [(local name, value)]: its own TensorFlow variables, numpy arrays (numpy scalars when 0-d)
    input_shapes, output_shapes, input_names, output_names    (version 5 only)

Variables are numpy arrays, read by `numpy_pickle` (its docstring shows how numpy pickles them).

Unpickling resolves only these globals, each to a ganforge stand-in that holds plain data:

    dnnlib.tflib.network.Network           -> TFNetwork, whose state is the dict above; the source is never used
    numpy.core.multiarray._reconstruct     -> ArrayRecord, given its value by BUILD
    numpy.ndarray                          -> a marker, the one class _reconstruct accepts
    numpy.dtype                            -> DTypeRecord, a numeric type from a fixed list of codes
    numpy.core.multiarray.scalar           -> ArrayRecord of a 0-d array
    (numpy._core.multiarray, numpy 2's name of the module, for the two functions; not protocol 5's _frombuffer,
    which no TensorFlow-era Python wrote)

BUILD is honoured on those three records alone, once each, with exactly the state dnnlib or numpy writes. An array's
raw bytes are exactly what its shape and type need; the arrays together hold no more bytes than the file, and every
variable holds an array of its own, so nothing read from the file is copied more than once (`tf_stylegan2` converts
each variable once). The generic guards (bounded reads, containers, keys) are `restricted_pickle`'s.
"""

import dataclasses
import pickle
from pathlib import Path

from ganforge.errors import UserError
from ganforge.interop.numpy_pickle import NUMPY_KINDS, ArrayRecord, NumpyBuilds, numpy_globals
from ganforge.interop.restricted_pickle import (
    DECODE_ERRORS,
    RefusedGlobal,
    RestrictedUnpickler,
    decode_detail,
    unpickle,
)
from ganforge.limits import shown, shown_name

NETWORKS = ("G", "D", "G_ema")  # the order of the pickled tuple (G, D, Gs)
STATE_KEYS = ("version", "name", "static_kwargs", "components", "build_module_src", "build_func_name", "variables")
VERSION_5_KEYS = ("input_shapes", "output_shapes", "input_names", "output_names")  # not used: shapes are checked
VERSIONS = (4, 5)  # 4: stylegan2; 5: stylegan2-ada (2, 3: StyleGAN 1 and Progressive GAN)
MAX_VARIABLE_NAME = 128  # "synthesis/1024x1024/Conv0_up/noise_strength" has 43 characters


class TFNetwork:
    """A `dnnlib.tflib.network.Network` as data: `state` is the dict its BUILD supplied (None until then)."""

    def __new__(cls, *args, **kwargs):
        if args or kwargs:
            raise pickle.UnpicklingError("a TensorFlow network made with arguments (a pickled one is given a state)")
        network = super().__new__(cls)
        network.state = None
        return network

    def set_state(self, state) -> None:
        if self.state is not None or type(state) is not dict:
            raise pickle.UnpicklingError("a TensorFlow network given a state twice, or one that is not a dict")
        self.state = state


ALLOWED = {("dnnlib.tflib.network", "Network"): TFNetwork, **numpy_globals(protocol_5=False)}


class _TFUnpickler(NumpyBuilds, RestrictedUnpickler):
    """The allow-list of a TensorFlow-era network pickle; BUILD on its networks, arrays and dtypes only."""

    allowed = ALLOWED
    format_name = "TensorFlow network pickle"

    def __init__(self, file, size: int):
        RestrictedUnpickler.__init__(self, file, size)
        NumpyBuilds.__init__(self, size)

    def build(self, target, state) -> None:
        if type(target) is TFNetwork:
            target.set_state(state)
        elif not self.build_numpy(target, state):
            self.refuse_build(target)

    def kind(self, value) -> str:
        names = {TFNetwork: "TensorFlow network", **NUMPY_KINDS}
        return names.get(type(value)) or super().kind(value)


def read_tf_pickle(path: Path):
    """The object graph of a TensorFlow-era NVlabs pickle, built from allowed data only; UserError otherwise."""
    try:
        return unpickle(path, _TFUnpickler)[0]
    except RefusedGlobal as err:
        raise UserError(
            f"{path}: refused: the pickle asks for {err.qualname}, which is not part of a TensorFlow StyleGAN2 "
            "network pickle; ganforge never runs code from a file, and nothing from this one was run"
        ) from None
    except DECODE_ERRORS as err:
        raise UserError(
            f"{path}: not a readable TensorFlow network pickle ({decode_detail(err)}); nothing from it was run"
        ) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None


@dataclasses.dataclass(frozen=True)
class TFNet:
    """One network of a TensorFlow-era pickle, its state checked: `role` names it in messages ("G_ema",
    "G_ema/mapping"); `variables` maps each variable's local name to its array."""

    role: str
    build_func_name: str
    static_kwargs: dict
    variables: dict
    components: dict


def network_of(path: Path, data, which: str) -> TFNet:
    """Network `which` (G, D or G_ema: the tuple's G, D, Gs) of an unpickled TensorFlow-era file, its state and its
    components' checked; UserError naming what the file holds otherwise."""
    if not (type(data) is tuple and len(data) == len(NETWORKS) and all(type(n) is TFNetwork for n in data)):
        raise UserError(f"{path}: a TensorFlow pickle, but not a StyleGAN2 network pickle (a tuple of G, D and Gs)")
    network = data[NETWORKS.index(which)]
    arrays: set[int] = set()
    top = _checked(path, which, network, arrays)
    components = {}
    for role, component in top.components.items():
        checked = _checked(path, f"{which}/{role}", component, arrays)
        if checked.components:
            raise UserError(f"{path}: {which}/{role} has components of its own; StyleGAN2's networks nest one deep")
        components[role] = checked
    return dataclasses.replace(top, components=components)


def _checked(path: Path, role: str, network, arrays: set) -> TFNet:
    """`network`'s state as a TFNet (its components not yet checked); `arrays` collects the ids of the arrays its
    variables hold, each of which must hold one of its own."""
    state = network.state if type(network) is TFNetwork else None
    if state is None:
        raise UserError(f"{path}: {role} is not a TensorFlow network with a state")
    keys = [k for k in state if k not in (*STATE_KEYS, *VERSION_5_KEYS)]
    missing = [k for k in STATE_KEYS if k not in state]
    if keys or missing:
        what = f"has no {', '.join(missing)}" if missing else f"has an unknown field {shown_name(keys[0])}"
        raise UserError(f"{path}: {role}'s state {what}; not a network dnnlib wrote")
    version = state["version"]
    if type(version) is not int or version not in VERSIONS:
        raise UserError(
            f"{path}: {role} is a TensorFlow network of version {shown(version)}; ganforge reads StyleGAN2's "
            "(versions 4 and 5), not those of StyleGAN 1 or Progressive GAN (2 and 3)"
        )
    fields = ("name", "build_func_name", "build_module_src", "static_kwargs", "components", "variables")
    types = (str, str, str, dict, dict, list)
    for field, kind in zip(fields, types, strict=True):
        if type(state[field]) is not kind:
            raise UserError(f"{path}: {role}'s {field} is {shown(state[field])}, not a {kind.__name__}")
    if not all(type(k) is str for k in (*state["static_kwargs"], *state["components"])):
        raise UserError(f"{path}: {role}'s static_kwargs or components are not named by strings")
    return TFNet(
        role,
        state["build_func_name"],
        state["static_kwargs"],
        _variables(path, role, state, arrays),
        state["components"],
    )


def _variables(path: Path, role: str, state: dict, arrays: set) -> dict:
    variables = {}
    for item in state["variables"]:
        pair = type(item) in (tuple, list) and len(item) == 2
        name, value = item if pair else (None, None)
        if not (type(name) is str and 0 < len(name) <= MAX_VARIABLE_NAME and name.isprintable()):
            raise UserError(f"{path}: {role} has a variable named {shown(name)}; not a network dnnlib wrote")
        if type(value) is not ArrayRecord or value.array is None:
            raise UserError(f"{path}: {role}'s variable {name} is {shown(value)}, not a numpy array")
        if name in variables or id(value) in arrays:
            raise UserError(f"{path}: {role}'s variable {name} is listed twice or shares another one's array")
        arrays.add(id(value))
        variables[name] = value.array
    return variables
