"""Python's pickle as a reader of data: the restricted unpickler that both NVlabs network readers build on (the
PyTorch pickles of `official_pickle`, the TensorFlow-era ones of `tf_pickle`).

A pickle is a program for a small stack machine whose GLOBAL opcodes import anything and whose REDUCE / NEWOBJ /
BUILD opcodes call it; loading one runs whatever it names. Here every global resolves through the reader's
allow-list (`find_class`; GLOBAL, STACK_GLOBAL, INST, OBJ and extension codes all go through it), each entry mapped
to a ganforge function or class that returns plain data; anything else is refused before it is imported or called.

The opcodes that change an object after it was made act only where a network pickle needs them: SETITEM(S) on
dicts, APPEND(S) on lists, ADDITEMS on sets, BUILD (set the state) only on what the reader's `build` accepts. Dict
keys and set items are plain values, whose hashing costs their length (hashing a tuple of shared tuples costs
2^depth). Every length an opcode declares is compared with what remains of the file before anything is read or
allocated. Python's own unpickler (pickle._Unpickler) is used because its opcodes can be replaced: the C one
allocates a declared length before reading it and grows its memo to any index a file names. Persistent ids are
refused by the base class, which has no persistent_load.
"""

import collections
import pickle
import struct
from pathlib import Path

import torch

from ganforge.limits import shown_name

# Malformed streams surface as any of these from pickle, from the readers' stand-ins, or from torch.load.
DECODE_ERRORS = (
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
PLAIN_KEYS = (str, int, float, bytes, bool, type(None))  # hashing costs their length


class RefusedGlobal(pickle.UnpicklingError):
    """The pickle names a global outside the allow-list; nothing it names has been imported or called."""

    def __init__(self, module: str, name: str, family: str):
        self.qualname = f"{shown_name(module)}.{shown_name(name)}"
        self.family = family  # the network family the file had shown when it asked, for the message
        super().__init__(f"refused global {self.qualname}")


def plain_keys(keys) -> list:
    keys = list(keys)
    if not all(type(k) in PLAIN_KEYS for k in keys):
        raise pickle.UnpicklingError("a dict key or set item that is not a plain value (string, number, bytes)")
    return keys


class BoundedFile:
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


class RestrictedUnpickler(pickle._Unpickler):
    """An unpickler whose globals come from `allowed` ((module, name) -> what it resolves to, or the name of one of
    its methods) and whose BUILD opcodes go to `build`; a reader subclasses it with its format's allow-list and BUILD
    targets."""

    dispatch = _Dispatch(pickle._Unpickler.dispatch)
    allowed: dict = {}
    dicts: tuple = (dict, collections.OrderedDict)
    format_name = "network pickle"  # what the messages say the pickle is not

    def __init__(self, file, size: int):
        super().__init__(BoundedFile(file, size))

    def find_class(self, module: str, name: str):
        """What an allowed global resolves to: an entry of `allowed`, or the unpickler's method its string names
        (for what the unpickler records as it builds)."""
        if (module, name) not in self.allowed:
            raise RefusedGlobal(module, name, self.family())
        found = self.allowed[(module, name)]
        return getattr(self, found) if isinstance(found, str) else found

    def family(self) -> str:
        """The network family what was read so far belongs to ("" where a format holds one family)."""
        return ""

    def build(self, target, state) -> None:
        """Set the state of `target` (BUILD); a reader allows it on the objects its format gives a state."""
        self.refuse_build(target)

    def refuse_build(self, target) -> None:
        raise pickle.UnpicklingError(
            f"the pickle sets the state of a {self.kind(target)} (BUILD), which a {self.format_name} never does"
        )

    def kind(self, value) -> str:
        """What `value` is, in a message (never its content)."""
        return "tensor" if isinstance(value, torch.Tensor) else type(value).__name__

    def load_build(self):
        state, target = self.stack[-1], self.stack[-2]
        self.build(target, state)
        self.stack.pop()

    def load_setitem(self):
        self._expect(self.stack[-3], self.dicts, "SETITEM")
        plain_keys([self.stack[-2]])
        super().load_setitem()

    def load_setitems(self):  # the items follow the mark; the dict is just before it
        self._expect(self._marked(), self.dicts, "SETITEMS")
        plain_keys(self.stack[0::2])
        super().load_setitems()

    def load_append(self):
        self._expect(self.stack[-2], (list,), "APPEND")
        super().load_append()

    def load_appends(self):
        self._expect(self._marked(), (list,), "APPENDS")
        super().load_appends()

    def load_additems(self):
        self._expect(self._marked(), (set,), "ADDITEMS")
        plain_keys(self.stack)
        super().load_additems()

    def load_dict(self):
        plain_keys(self.stack[0::2])
        super().load_dict()

    def load_frozenset(self):
        plain_keys(self.stack)
        super().load_frozenset()

    def load_bytearray8(self):
        raise pickle.UnpicklingError(f"a bytearray (BYTEARRAY8), which a {self.format_name} never holds")

    def _marked(self):
        """The object just before the innermost mark (what SETITEMS, APPENDS and ADDITEMS change)."""
        if not self.metastack or not self.metastack[-1]:
            raise pickle.UnpicklingError("an opcode that needs a mark and an object before it has neither")
        return self.metastack[-1][-1]

    def _expect(self, target, types: tuple, opcode: str) -> None:
        if type(target) not in types:
            raise pickle.UnpicklingError(f"{opcode} on a {self.kind(target)}, which a {self.format_name} never does")


RestrictedUnpickler.dispatch.update(
    {
        pickle.BUILD[0]: RestrictedUnpickler.load_build,
        pickle.SETITEM[0]: RestrictedUnpickler.load_setitem,
        pickle.SETITEMS[0]: RestrictedUnpickler.load_setitems,
        pickle.APPEND[0]: RestrictedUnpickler.load_append,
        pickle.APPENDS[0]: RestrictedUnpickler.load_appends,
        pickle.ADDITEMS[0]: RestrictedUnpickler.load_additems,
        pickle.DICT[0]: RestrictedUnpickler.load_dict,
        pickle.FROZENSET[0]: RestrictedUnpickler.load_frozenset,
        pickle.BYTEARRAY8[0]: RestrictedUnpickler.load_bytearray8,
    }
)


def unpickle(path: Path, unpickler_type: type) -> tuple[object, RestrictedUnpickler]:
    """The object graph of the pickle at `path` read by `unpickler_type`, and the unpickler (for what it recorded).
    RefusedGlobal, DECODE_ERRORS and OSError reach the caller, which words them for its format."""
    with open(path, "rb") as file:
        unpickler = unpickler_type(file, Path(path).stat().st_size)
        return unpickler.load(), unpickler


def decode_detail(err: Exception) -> str:
    """A decoding error, bounded, for a message (the type named where the text alone says little)."""
    detail = str(err)[:MAX_MESSAGE_DETAIL]
    return f"{type(err).__name__}: {detail}" if type(err) in (KeyError, EOFError) or not detail else detail
