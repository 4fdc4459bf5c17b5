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
    numpy's dtype, scalar and array globals               -> `numpy_pickle`'s records (numeric types, exact sizes)

Every other global is refused before anything is called; `read_pickle` raises a UserError naming it and the family
of network the file had shown so far.

The generic guards (bounded reads, container opcodes on containers only, plain keys) are `restricted_pickle`'s.
BUILD (set the state) acts on numpy dtypes and arrays alone, with exactly the states numpy writes: BUILD on a tensor
would run `Tensor.__setstate__`, whose `set_` widens a storage to any size without initialising it (the process's
memory would become weights); BUILD on a record would overwrite its fields. After loading, every tensor is checked to
lie within the storage the file supplied for it, every storage to hold exactly the bytes it was read with, and every
numpy array to be a [width, height] pair where StyleGAN3's layers keep one (ARRAY_PLACES) and nowhere else.
"""

import collections
import dataclasses
import io
import pickle
import warnings
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop.numpy_pickle import NUMPY_KINDS, ArrayRecord, InBandBuffer, NumpyBuilds, numpy_globals
from ganforge.interop.restricted_pickle import (
    DECODE_ERRORS,
    RefusedGlobal,
    RestrictedUnpickler,
    decode_detail,
    plain_keys,
    unpickle,
)
from ganforge.limits import shown_name


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


@dataclasses.dataclass(frozen=True)
class _Storage:
    """A storage as the file supplied it: its bytes, element type, and where they were at loading."""

    data: torch.UntypedStorage
    dtype: torch.dtype
    nbytes: int
    data_ptr: int


DICTS = (dict, collections.OrderedDict, EasyDict)
# Where NVlabs' networks keep numpy arrays: StyleGAN3's layers hold their sizes as [width, height] pairs (numpy
# scalars, such as weight gains and sampling rates, may be any attribute: ganforge recomputes them).
ARRAY_PLACES = (("SynthesisInput", "size"), ("SynthesisLayer", "in_size"), ("SynthesisLayer", "out_size"))
SIZE_PAIR = (2,)
# Module classes that show which family a pickle holds, for messages (StyleGAN3 files hold a StyleGAN2 D too).
FAMILY_CLASSES = (
    ("StyleGAN3", ("SynthesisInput",)),
    ("StyleGAN2", ("SynthesisBlock", "ToRGBLayer", "DiscriminatorBlock", "DiscriminatorEpilogue")),
)


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


# What each allowed global resolves to; a string: that method of the unpickler (it records what it builds).
ALLOWED = {
    ("torch_utils.persistence", "_reconstruct_persistent_obj"): "_persistent_record",
    ("torch._utils", "_rebuild_tensor_v2"): "_rebuild_tensor",
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.storage", "_load_from_bytes"): _load_storage,
    ("collections", "OrderedDict"): _ordered_dict,
    ("builtins", "set"): _set,
    ("dnnlib.util", "EasyDict"): EasyDict,
    **numpy_globals(protocol_5=True),
}


class _RestrictedUnpickler(NumpyBuilds, RestrictedUnpickler):
    """The allow-list of a PyTorch network pickle (ALLOWED), BUILD on numpy values only; every tensor it rebuilds is
    recorded with the storage it views, for the check after loading, and every module record's class name, for
    messages."""

    allowed = ALLOWED
    dicts = DICTS
    dispatch = type(RestrictedUnpickler.dispatch)(RestrictedUnpickler.dispatch)

    def __init__(self, file, size: int):
        RestrictedUnpickler.__init__(self, file, size)
        NumpyBuilds.__init__(self, size)
        self.built: list[tuple[torch.Tensor, _Storage]] = []
        self.class_names: set[str] = set()

    def _persistent_record(self, meta) -> PersistentRecord:
        if not (type(meta) is dict and type(meta.get("class_name")) is str and type(meta.get("state")) is dict):
            raise pickle.UnpicklingError("a persistent object without a class name and a state dict")
        self.class_names.add(meta["class_name"])
        return PersistentRecord(meta["class_name"], meta["state"])

    def family(self) -> str:
        """The network family the records read so far belong to, for a message."""
        found = [family for family, names in FAMILY_CLASSES if self.class_names.intersection(names)]
        return found[0] if found else "StyleGAN2-ADA or StyleGAN3"

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
        if self.build_numpy(target, state):
            return
        if not (type(target) in DICTS and (state is None or (type(state) is dict and not state))):  # a no-op
            self.refuse_build(target)

    def kind(self, value) -> str:
        if isinstance(value, PersistentRecord):
            return "network module record"
        return NUMPY_KINDS.get(type(value)) or super().kind(value)


_RestrictedUnpickler.dispatch[pickle.BYTEARRAY8[0]] = NumpyBuilds.load_bytearray8


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


def _check_numpy_places(data) -> None:
    """UnpicklingError unless every numpy array in the object graph is a [width, height] pair of integers at one of
    ARRAY_PLACES, and no in-band buffer is left outside an array. Each container is visited once; an array is checked
    at every place it is reached from (the memo may put one array in several places)."""
    seen, pending = set(), [(data, "the top level")]
    while pending:
        value, where = pending.pop()
        if type(value) in (ArrayRecord, InBandBuffer):
            _check_loose(value, where)
        elif id(value) not in seen:
            seen.add(id(value))
            pending.extend(_placed_children(value, where))


def _placed_children(value, where: str) -> list:
    """(value, where) of what `value` holds and whose place is not yet checked, `where` naming the nearest module
    attribute it is under; the arrays of a module record's ARRAY_PLACES are checked here and left out."""
    if isinstance(value, PersistentRecord):
        children = []
        for name, item in value.state.items():
            place = f"{shown_name(value.class_name)}.{shown_name(name)}"
            if type(item) is ArrayRecord and (value.class_name, name) in ARRAY_PLACES:
                _check_size_pair(place, item)
            else:
                children.append((item, place))
        return children
    if type(value) in DICTS:
        return [(item, where) for item in value.values()]  # keys are plain values
    return [(item, where) for item in value] if type(value) in (list, tuple, set, frozenset) else []


def _check_size_pair(place: str, record: ArrayRecord) -> None:
    array = record.array
    if array is None or array.shape != SIZE_PAIR or array.dtype.kind not in "iu":
        shape = "never given" if array is None else f"{array.dtype.kind}{array.dtype.itemsize} {array.shape}"
        raise pickle.UnpicklingError(f"{place} is a numpy array ({shape}), not a [width, height] pair")


def _check_loose(value, where: str) -> None:
    """A numpy scalar may be anywhere; an array or an in-band buffer only where `_placed_children` checked it."""
    if type(value) is ArrayRecord and value.array is not None and value.array.ndim == 0:
        return
    raise pickle.UnpicklingError(
        f"{NUMPY_KINDS[type(value)]} in {where}, outside the layer attributes where NVlabs' networks keep arrays "
        f"({', '.join(f'{c}.{n}' for c, n in ARRAY_PLACES)})"
    )


def read_pickle(path: Path):
    """The object graph of an NVlabs pickle, built from allowed data only; UserError for anything else."""
    try:
        data, unpickler = unpickle(path, _RestrictedUnpickler)
        _check_storages(unpickler.built)
        _check_numpy_places(data)
    except RefusedGlobal as err:
        raise UserError(
            f"{path}: refused: the pickle asks for {err.qualname}, which is not part of an NVlabs "
            f"{err.family} network pickle; ganforge never runs code from a file, and nothing from this one "
            "was run"
        ) from None
    except DECODE_ERRORS as err:
        raise UserError(
            f"{path}: not a readable NVlabs network pickle ({decode_detail(err)}); nothing from it was run"
        ) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    return data
