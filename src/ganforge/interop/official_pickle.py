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

The generic guards (bounded reads, container opcodes on containers only, plain keys) are `restricted_pickle`'s.
BUILD (set the state) acts on numpy values alone: BUILD on a tensor would run `Tensor.__setstate__`, whose `set_`
widens a storage to any size without initialising it (the process's memory would become weights); BUILD on a record
would overwrite its fields. After loading, every tensor is checked to lie within the storage the file supplied for
it, and every storage to hold exactly the bytes it was read with.
"""

import collections
import dataclasses
import io
import pickle
import warnings
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop.restricted_pickle import (
    DECODE_ERRORS,
    RefusedGlobal,
    RestrictedUnpickler,
    decode_detail,
    plain_keys,
    unpickle,
)


@dataclasses.dataclass
class PersistentRecord:
    """One persistent network module as data: its class name and its `__dict__` (never executed source)."""

    class_name: str
    state: dict


class EasyDict(dict):
    """dnnlib's attribute dictionary, read as a plain dict (holds constructor kwargs such as mapping_kwargs). A
    pickle makes it empty (NEWOBJ) and then sets its items, whose keys are checked; made with arguments, the keys
    would not be."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise pickle.UnpicklingError("an EasyDict made with arguments (a pickled one has its items set)")
        super().__init__()


class NumpyValue:
    """A numpy dtype or scalar kept as its raw pickle arguments; layers store `weight_gain` this way, and ganforge
    recomputes such values instead of reading them."""

    def __init__(self, *args):
        self.args, self.state = args, None

    def __setstate__(self, state):
        self.state = state


@dataclasses.dataclass(frozen=True)
class _Storage:
    """A storage as the file supplied it: its bytes, element type, and where they were at loading."""

    data: torch.UntypedStorage
    dtype: torch.dtype
    nbytes: int
    data_ptr: int


BUILD_TARGETS = (NumpyValue,)  # the only objects a network pickle gives a state (numpy dtypes)
DICTS = (dict, collections.OrderedDict, EasyDict)


def _reconstruct_persistent_obj(meta) -> PersistentRecord:
    if not (isinstance(meta, dict) and isinstance(meta.get("class_name"), str) and isinstance(meta.get("state"), dict)):
        raise pickle.UnpicklingError("a persistent object without a class name and a state dict")
    return PersistentRecord(meta["class_name"], meta["state"])


def _ordered_dict(*args) -> collections.OrderedDict:
    """OrderedDict(pairs), keys checked plain first (torch pickles its OrderedDicts empty, then sets items)."""
    if args:
        if len(args) != 1 or not isinstance(args[0], (list, tuple)):
            raise pickle.UnpicklingError("an OrderedDict made from something other than a list of pairs")
        pairs = [tuple(p) for p in args[0] if isinstance(p, (list, tuple)) and len(p) == 2]
        if len(pairs) != len(args[0]):
            raise pickle.UnpicklingError("an OrderedDict made from something other than a list of pairs")
        plain_keys(k for k, _ in pairs)
        return collections.OrderedDict(pairs)
    return collections.OrderedDict()


def _set(items=()) -> set:
    if not isinstance(items, (list, tuple)):
        raise pickle.UnpicklingError("a set made from something other than a list")
    return set(plain_keys(items))


def _load_storage(data) -> _Storage:
    """A tensor storage pickled by torch (`torch.save` of the storage alone), read with torch's tensors-only loader."""
    if not isinstance(data, bytes):
        raise pickle.UnpicklingError("a nested storage that is not bytes")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
        try:
            storage = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except (*DECODE_ERRORS, AssertionError):  # torch's legacy reader asserts what the stream must hold
            raise pickle.UnpicklingError(
                "a nested tensor storage is not plain tensor data (torch.load with "
                "weights_only=True refused or could not read it)"
            ) from None
        if not isinstance(storage, torch.TypedStorage):
            raise pickle.UnpicklingError(f"a nested storage holds {type(storage).__name__}, not a tensor storage")
        untyped = storage.untyped()
    if untyped.nbytes() > len(data):  # torch checks this too; a storage never holds more than its bytes in the file
        raise pickle.UnpicklingError(f"a nested storage of {untyped.nbytes()} bytes read from {len(data)} bytes")
    return _Storage(untyped, storage.dtype, untyped.nbytes(), untyped.data_ptr())


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, state=None) -> torch.Tensor:
    if not isinstance(data, torch.Tensor):
        raise pickle.UnpicklingError("a parameter that does not hold a tensor")
    return data


# What each allowed global resolves to; None: a method of the unpickler (it records what it builds).
ALLOWED = {
    ("torch_utils.persistence", "_reconstruct_persistent_obj"): _reconstruct_persistent_obj,
    ("torch._utils", "_rebuild_tensor_v2"): None,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.storage", "_load_from_bytes"): _load_storage,
    ("collections", "OrderedDict"): _ordered_dict,
    ("builtins", "set"): _set,
    ("dnnlib.util", "EasyDict"): EasyDict,
    ("numpy", "dtype"): NumpyValue,
    ("numpy.core.multiarray", "scalar"): NumpyValue,
    ("numpy._core.multiarray", "scalar"): NumpyValue,
}


class _RestrictedUnpickler(RestrictedUnpickler):
    """The allow-list of a PyTorch network pickle (ALLOWED), BUILD on numpy values only; every tensor it rebuilds is
    recorded with the storage it views, for the check after loading."""

    allowed = ALLOWED
    dicts = DICTS

    def __init__(self, file, size: int):
        super().__init__(file, size)
        self.built: list[tuple[torch.Tensor, _Storage]] = []

    def find_class(self, module: str, name: str):
        return super().find_class(module, name) or self._rebuild_tensor

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
        """The tensor view [offset, size, stride] of `storage`; the range is checked, since `Tensor.set_` does not."""
        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError("a tensor whose storage is not a tensor storage")
        ints = [offset, *size, *stride] if isinstance(size, tuple) and isinstance(stride, tuple) else None
        if ints is None or len(size) != len(stride) or not all(type(i) is int and i >= 0 for i in ints):
            raise pickle.UnpicklingError("a tensor with a malformed offset, size or stride")
        if metadata:
            raise pickle.UnpicklingError("a tensor with extra metadata (conjugate or negative bits) is not supported")
        _check_view(storage, offset, size, stride)
        tensor = torch.empty(0, dtype=storage.dtype).set_(storage.data, offset, size, stride)
        self.built.append((tensor, storage))
        return tensor

    def build(self, target, state) -> None:
        if type(target) in BUILD_TARGETS:
            target.__setstate__(state)
        elif not (type(target) in DICTS and (state is None or (type(state) is dict and not state))):  # a no-op
            self.refuse_build(target)

    def kind(self, value) -> str:
        return "network module record" if isinstance(value, PersistentRecord) else super().kind(value)


def _check_view(storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
    """UnpicklingError unless the view lies within `storage` and has no more elements than it (no element is read
    twice to make a tensor larger than the bytes the file supplied)."""
    numel = storage.nbytes // storage.dtype.itemsize
    count = 1
    for n in size:
        count *= n
    if count == 0:
        return
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if last >= numel:
        raise pickle.UnpicklingError(f"a tensor reaches element {last} of a storage of {numel}")
    if count > numel:
        raise pickle.UnpicklingError(f"a tensor of {count} elements over a storage of {numel} (elements repeated)")


def _check_storages(built: list) -> None:
    """After loading: each tensor still views the storage the file supplied, unchanged in size and place, within its
    range. Nothing in the stream may have changed one (BUILD is refused; this holds whatever the opcodes did)."""
    for tensor, storage in built:
        current = tensor.untyped_storage()
        if current.data_ptr() != storage.data_ptr or current.nbytes() != storage.nbytes:
            raise pickle.UnpicklingError(
                f"a tensor's storage now holds {current.nbytes()} bytes, but the file supplied {storage.nbytes}"
            )
        if tensor.dtype != storage.dtype:
            raise pickle.UnpicklingError("a tensor's element type changed after it was read")
        _check_view(storage, tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()))


def read_pickle(path: Path):
    """The object graph of an NVlabs pickle, built from allowed data only; UserError for anything else."""
    try:
        data, unpickler = unpickle(path, _RestrictedUnpickler)
        _check_storages(unpickler.built)
    except RefusedGlobal as err:
        raise UserError(
            f"{path}: refused: the pickle asks for {err.qualname}, which is not part of a StyleGAN2 network pickle; "
            "ganforge never runs code from a file, and nothing from this one was run"
        ) from None
    except DECODE_ERRORS as err:
        raise UserError(
            f"{path}: not a readable NVlabs network pickle ({decode_detail(err)}); nothing from it was run"
        ) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    return data
