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

The opcodes that change an object after it was made act only where a network pickle needs them: SETITEM(S) on
dicts, APPEND(S) on lists, ADDITEMS on sets, BUILD (set the state) on numpy values alone. BUILD on a tensor would run
`Tensor.__setstate__`, whose `set_` widens a storage to any size without initialising it (the process's memory
would become weights); BUILD on a record would overwrite its fields. Dict keys and set items are plain values, whose
hashing costs their length (hashing a tuple of shared tuples costs 2^depth). Every length an opcode declares is
compared with what remains of the file before anything is read or allocated. After loading, every tensor is checked
to lie within the storage the file supplied for it, and every storage to hold exactly the bytes it was read with.
"""

import collections
import dataclasses
import io
import pickle
import struct
import warnings
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.limits import shown_name

# Malformed streams surface as any of these from pickle, from our stand-ins, or from torch.load.
_DECODE_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    RuntimeError,
    OverflowError,
    struct.error,
)
MAX_MESSAGE_DETAIL = 200  # characters of a decoding error quoted in a message


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle names a global outside the allow-list; nothing it names has been imported or called."""

    def __init__(self, module: str, name: str):
        self.qualname = f"{shown_name(module)}.{shown_name(name)}"
        super().__init__(f"refused global {self.qualname}")


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


PLAIN_KEYS = (str, int, float, bytes, bool, type(None))  # hashing costs their length
BUILD_TARGETS = (NumpyValue,)  # the only objects a network pickle gives a state (numpy dtypes)
DICTS = (dict, collections.OrderedDict, EasyDict)


def _plain_keys(keys) -> list:
    keys = list(keys)
    if not all(type(k) in PLAIN_KEYS for k in keys):
        raise pickle.UnpicklingError("a dict key or set item that is not a plain value (string, number, bytes)")
    return keys


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
        _plain_keys(k for k, _ in pairs)
        return collections.OrderedDict(pairs)
    return collections.OrderedDict()


def _set(items=()) -> set:
    if not isinstance(items, (list, tuple)):
        raise pickle.UnpicklingError("a set made from something other than a list")
    return set(_plain_keys(items))


def _load_storage(data) -> _Storage:
    """A tensor storage pickled by torch (`torch.save` of the storage alone), read with torch's tensors-only loader."""
    if not isinstance(data, bytes):
        raise pickle.UnpicklingError("a nested storage that is not bytes")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
        try:
            storage = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except (*_DECODE_ERRORS, AssertionError):  # torch's legacy reader asserts what the stream must hold
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


class _BoundedFile:
    """The pickle file, refusing to read (and so the unpickler to allocate) more than what remains of it."""

    def __init__(self, file, size: int):
        self.file, self.left = file, size

    def read(self, n: int) -> bytes:
        self._check(n)
        data = self.file.read(n)
        self.left -= len(data)
        return data

    def readinto(self, buffer) -> int:
        self._check(len(buffer))
        n = self.file.readinto(buffer)
        self.left -= n
        return n

    def readline(self) -> bytes:
        line = self.file.readline()
        self.left -= len(line)
        return line

    def _check(self, n: int) -> None:
        if not 0 <= n <= self.left:
            raise pickle.UnpicklingError(f"an opcode declares {n} bytes where {self.left} remain in the file")


class _Dispatch(dict):
    def __missing__(self, key):
        raise pickle.UnpicklingError(f"unknown opcode 0x{key:02x}")


class _RestrictedUnpickler(pickle._Unpickler):
    """Every global (GLOBAL, STACK_GLOBAL, INST, OBJ and extension codes all go through find_class) comes from
    ALLOWED; persistent ids are refused by the base class, which has no persistent_load. Python's own unpickler
    (pickle._Unpickler) is used because its opcodes can be replaced: the C one allocates a declared length before
    reading it and grows its memo to any index a file names."""

    dispatch = _Dispatch(pickle._Unpickler.dispatch)

    def __init__(self, file, size: int):
        super().__init__(_BoundedFile(file, size))
        self.built: list[tuple[torch.Tensor, _Storage]] = []

    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED:
            raise RefusedGlobal(module, name)
        return ALLOWED[(module, name)] or self._rebuild_tensor

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

    def load_build(self):
        state, target = self.stack[-1], self.stack[-2]
        if type(target) in BUILD_TARGETS:
            target.__setstate__(state)
        elif not (type(target) in DICTS and (state is None or (type(state) is dict and not state))):  # a no-op
            raise pickle.UnpicklingError(
                f"the pickle sets the state of a {_kind(target)} (BUILD), which a network pickle never does"
            )
        self.stack.pop()

    def load_setitem(self):
        _expect(self.stack[-3], DICTS, "SETITEM")
        _plain_keys([self.stack[-2]])
        super().load_setitem()

    def load_setitems(self):  # the items follow the mark; the dict is just before it
        _expect(self._marked(), DICTS, "SETITEMS")
        _plain_keys(self.stack[0::2])
        super().load_setitems()

    def load_append(self):
        _expect(self.stack[-2], (list,), "APPEND")
        super().load_append()

    def load_appends(self):
        _expect(self._marked(), (list,), "APPENDS")
        super().load_appends()

    def load_additems(self):
        _expect(self._marked(), (set,), "ADDITEMS")
        _plain_keys(self.stack)
        super().load_additems()

    def load_dict(self):
        _plain_keys(self.stack[0::2])
        super().load_dict()

    def load_frozenset(self):
        _plain_keys(self.stack)
        super().load_frozenset()

    def load_bytearray8(self):
        raise pickle.UnpicklingError("a bytearray (BYTEARRAY8), which a network pickle never holds")

    def _marked(self):
        """The object just before the innermost mark (what SETITEMS, APPENDS and ADDITEMS change)."""
        if not self.metastack or not self.metastack[-1]:
            raise pickle.UnpicklingError("an opcode that needs a mark and an object before it has neither")
        return self.metastack[-1][-1]


_RestrictedUnpickler.dispatch.update(
    {
        pickle.BUILD[0]: _RestrictedUnpickler.load_build,
        pickle.SETITEM[0]: _RestrictedUnpickler.load_setitem,
        pickle.SETITEMS[0]: _RestrictedUnpickler.load_setitems,
        pickle.APPEND[0]: _RestrictedUnpickler.load_append,
        pickle.APPENDS[0]: _RestrictedUnpickler.load_appends,
        pickle.ADDITEMS[0]: _RestrictedUnpickler.load_additems,
        pickle.DICT[0]: _RestrictedUnpickler.load_dict,
        pickle.FROZENSET[0]: _RestrictedUnpickler.load_frozenset,
        pickle.BYTEARRAY8[0]: _RestrictedUnpickler.load_bytearray8,
    }
)


def _expect(target, types: tuple, opcode: str) -> None:
    if type(target) not in types:
        raise pickle.UnpicklingError(f"{opcode} on a {_kind(target)}, which a network pickle never does")


def _kind(value) -> str:
    if isinstance(value, torch.Tensor):
        return "tensor"
    return "network module record" if isinstance(value, PersistentRecord) else type(value).__name__


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
        with open(path, "rb") as file:
            unpickler = _RestrictedUnpickler(file, Path(path).stat().st_size)
            data = unpickler.load()
        _check_storages(unpickler.built)
    except RefusedGlobal as err:
        raise UserError(_refusal(path, err.qualname)) from None
    except _DECODE_ERRORS as err:
        detail = str(err)[:MAX_MESSAGE_DETAIL]
        detail = f"{type(err).__name__}: {detail}" if type(err) in (KeyError, EOFError) or not detail else detail
        raise UserError(f"{path}: not a readable NVlabs network pickle ({detail}); nothing from it was run") from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    return data


def _refusal(path: Path, qualname: str) -> str:
    if qualname.startswith("dnnlib.tflib"):
        return (
            f"{path}: a TensorFlow StyleGAN pickle ({qualname}); ganforge reads the PyTorch pickles of "
            "stylegan2-ada-pytorch and stylegan3: convert it with stylegan2-ada-pytorch's legacy.py"
        )
    return (
        f"{path}: refused: the pickle asks for {qualname}, which is not part of a StyleGAN2 network pickle; "
        "ganforge never runs code from a file, and nothing from this one was run"
    )
