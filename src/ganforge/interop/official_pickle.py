"""Read NVlabs' network pickles (stylegan2-ada-pytorch, stylegan3) as data, without executing anything from the file.

An NVlabs pickle is `pickle.dump` of a dict {"G", "D", "G_ema", "augment_pipe", "training_set_kwargs"}. Each network
is a "persistent" object (`torch_utils/persistence.py`): the pickle stores the call
`torch_utils.persistence._reconstruct_persistent_obj(meta)`, where `meta` holds the Python source of the module that
defined the class, the class name and the object's `__dict__` (`_parameters`, `_buffers`, `_modules`,
`_init_kwargs`, plain attributes). NVlabs' loader executes that source; a file can therefore run anything.

Here unpickling resolves only an allow-list of globals, each to a ganforge function or class that returns plain data:

    torch_utils.persistence._reconstruct_persistent_obj   -> PersistentRecord(class_name, state); source ignored
    torch._utils._rebuild_tensor_v2                       -> torch.Tensor over a checked range of a storage
    torch._utils._rebuild_parameter[_with_state]           -> that tensor
    torch.storage._load_from_bytes                        -> the nested storage, read by torch.load(weights_only=True)
    collections.OrderedDict, builtins.set                 -> themselves (containers, constructed from data)
    dnnlib.util.EasyDict                                  -> EasyDict, a plain dict
    numpy.dtype, numpy.core.multiarray.scalar             -> NumpyValue, the raw arguments (never interpreted)

Every other global is refused before anything is called; `read_pickle` raises a UserError naming it.
"""

import collections
import dataclasses
import io
import pickle
import warnings
from pathlib import Path

import torch

from ganforge.errors import UserError

# Malformed streams surface as any of these from pickle, from our stand-ins, or from torch.load.
_DECODE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
                  RuntimeError, OverflowError)  # fmt: skip


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle names a global outside the allow-list; nothing it names has been imported or called."""

    def __init__(self, module: str, name: str):
        self.qualname = f"{module}.{name}"
        super().__init__(f"refused global {self.qualname}")


@dataclasses.dataclass
class PersistentRecord:
    """One persistent network module as data: its class name and its `__dict__` (never executed source)."""

    class_name: str
    state: dict


class EasyDict(dict):
    """dnnlib's attribute dictionary, read as a plain dict (holds constructor kwargs such as mapping_kwargs)."""


class NumpyValue:
    """A numpy dtype or scalar kept as its raw pickle arguments; layers store `weight_gain` this way, and ganforge
    recomputes such values instead of reading them."""

    def __init__(self, *args):
        self.args, self.state = args, None

    def __setstate__(self, state):
        self.state = state


@dataclasses.dataclass
class _Storage:
    data: torch.UntypedStorage
    dtype: torch.dtype


def _reconstruct_persistent_obj(meta) -> PersistentRecord:
    if not (isinstance(meta, dict) and isinstance(meta.get("class_name"), str) and isinstance(meta.get("state"), dict)):
        raise pickle.UnpicklingError("a persistent object without a class name and a state dict")
    return PersistentRecord(meta["class_name"], meta["state"])


def _load_storage(data) -> _Storage:
    """A tensor storage pickled by torch (`torch.save` of the storage alone), read with torch's tensors-only loader."""
    if not isinstance(data, bytes):
        raise pickle.UnpicklingError("a nested storage that is not bytes")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
        try:
            storage = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except _DECODE_ERRORS:
            raise pickle.UnpicklingError("a nested tensor storage is not plain tensor data (torch.load with "
                                         "weights_only=True refused or could not read it)") from None  # fmt: skip
        if not isinstance(storage, torch.TypedStorage):
            raise pickle.UnpicklingError(f"a nested storage holds {type(storage).__name__}, not a tensor storage")
        return _Storage(storage.untyped(), storage.dtype)


def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    """The tensor view [offset, size, stride] of `storage`; the range is checked, since `Tensor.set_` does not."""
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError("a tensor whose storage is not a tensor storage")
    ints = [offset, *size, *stride] if isinstance(size, tuple) and isinstance(stride, tuple) else None
    if ints is None or len(size) != len(stride) or not all(type(i) is int and i >= 0 for i in ints):
        raise pickle.UnpicklingError("a tensor with a malformed offset, size or stride")
    if metadata:
        raise pickle.UnpicklingError("a tensor with extra metadata (conjugate or negative bits) is not supported")
    numel = storage.data.nbytes() // storage.dtype.itemsize
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if 0 not in size and last >= numel:
        raise pickle.UnpicklingError(f"a tensor reaches element {last} of a storage of {numel}")
    return torch.empty(0, dtype=storage.dtype).set_(storage.data, offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, state=None) -> torch.Tensor:
    if not isinstance(data, torch.Tensor):
        raise pickle.UnpicklingError("a parameter that does not hold a tensor")
    return data


ALLOWED = {
    ("torch_utils.persistence", "_reconstruct_persistent_obj"): _reconstruct_persistent_obj,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.storage", "_load_from_bytes"): _load_storage,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("dnnlib.util", "EasyDict"): EasyDict,
    ("numpy", "dtype"): NumpyValue,
    ("numpy.core.multiarray", "scalar"): NumpyValue,
    ("numpy._core.multiarray", "scalar"): NumpyValue,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Every global (GLOBAL, STACK_GLOBAL, INST, OBJ and extension codes all go through find_class) comes from
    ALLOWED; persistent ids are refused by the base class, which has no persistent_load."""

    def find_class(self, module: str, name: str):
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise RefusedGlobal(module, name) from None


def read_pickle(path: Path):
    """The object graph of an NVlabs pickle, built from allowed data only; UserError for anything else."""
    try:
        with open(path, "rb") as file:
            return _RestrictedUnpickler(file).load()
    except RefusedGlobal as err:
        raise UserError(_refusal(path, err.qualname)) from None
    except _DECODE_ERRORS as err:
        raise UserError(f"{path}: not a readable NVlabs network pickle ({err}); nothing from it was run") from None


def _refusal(path: Path, qualname: str) -> str:
    if qualname.startswith("dnnlib.tflib"):
        return (f"{path}: a TensorFlow StyleGAN pickle ({qualname}); ganforge reads the PyTorch pickles of "
                "stylegan2-ada-pytorch and stylegan3: convert it with stylegan2-ada-pytorch's legacy.py")  # fmt: skip
    return (f"{path}: refused: the pickle asks for {qualname}, which is not part of a StyleGAN2 network pickle; "
            "ganforge never runs code from a file, and nothing from this one was run")  # fmt: skip
