"""numpy values inside NVlabs network pickles, read as data: the globals and BUILD states numpy writes, nothing else.

TensorFlow-era networks keep their variables as numpy arrays; the PyTorch networks keep numpy scalars as layer
attributes (`weight_gain = np.sqrt(...)`, StyleGAN3's sampling rates and cutoffs) and StyleGAN3 keeps small arrays
(`SynthesisInput.size`, `SynthesisLayer.in_size` / `out_size`: [width, height]). numpy pickles them as:

    array, protocol <= 4   numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b"b"), then BUILD with
                           (1, shape, dtype, is_fortran, raw bytes)
    array, protocol 5      numpy.core.numeric._frombuffer(buffer, dtype, shape, order) for a contiguous array, the
                           buffer in-band (BYTEARRAY8 when writable); Python 3.14 pickles with protocol 5 by default
    dtype                  numpy.dtype(code, False, True), then BUILD with (3, byte order, None, None, None, -1, -1, 0)
    scalar                 numpy.core.multiarray.scalar(dtype, raw bytes)

(numpy 2 names the modules numpy._core.*; a file written under numpy 1.x names numpy.core.*.) Each global resolves
to a record here: a dtype is one of NUMERIC_CODES (no object, string or structured types), an array holds exactly the
bytes its shape and type need, at most MAX_ARRAY_DIMS dimensions, and the arrays of one file together hold no more
bytes than the file (the same bytes, shared through the memo, cannot make many arrays). A reader says where arrays
may appear (`misplaced`), since a format that holds them in a few places holds them nowhere else.
"""

import math
import pickle
import struct

import numpy as np

from ganforge.limits import shown

NUMERIC_CODES = ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1")  # no object arrays
DTYPE_STATE_TAIL = (None, None, None, -1, -1, 0)  # no sub-array, no fields, default size, alignment and flags
MAX_ARRAY_DIMS = 8  # TF StyleGAN2 variables have at most 4 ([kh, kw, in, out])


class DTypeRecord:
    """`numpy.dtype(code, False, True)` for a numeric `code`; `dtype` is set by its BUILD (the byte order)."""

    def __new__(cls, code=None, align=False, copy=True):
        if code not in NUMERIC_CODES or align is not False or copy is not True:
            raise pickle.UnpicklingError("a numpy dtype that is not a plain numeric type (float, int, bool)")
        record = super().__new__(cls)
        record.code, record.dtype = code, None
        return record

    def set_order(self, state) -> None:
        if self.dtype is not None or not (type(state) is tuple and len(state) == 8 and state[0] == 3):
            raise pickle.UnpicklingError("a numpy dtype given a state twice, or not numpy's (version 3, 8 fields)")
        order = "|" if np.dtype(self.code).itemsize == 1 else "<"  # what numpy writes on a little-endian machine
        if state[1] != order or state[2:] != DTYPE_STATE_TAIL:
            raise pickle.UnpicklingError(f"a numpy {self.code} dtype with another byte order or layout than numpy's")
        self.dtype = np.dtype(order + self.code)


class ArrayRecord:
    """A numpy array as data: `array` (a read-only view of the bytes the file supplied) is set by its BUILD, or
    at once by a scalar or `_frombuffer`."""

    def __init__(self, array: np.ndarray | None = None):
        self.array = array


class InBandBuffer:
    """The bytes of a BYTEARRAY8 opcode: protocol 5 writes an array's contents this way, and `_frombuffer` is the one
    place that takes them (a reader refuses one found anywhere else)."""

    def __init__(self, data: bytes):
        self.data = data


class _Marker:
    def __init__(self, name: str):
        self.name = name


NDARRAY = _Marker("numpy.ndarray")


def _reconstruct(cls, shape, code) -> ArrayRecord:
    if cls is not NDARRAY or shape != (0,) or code != b"b":
        raise pickle.UnpicklingError("a numpy array reconstruction with other arguments than numpy's")
    return ArrayRecord()


def _array(dtype, shape: tuple, data) -> np.ndarray:
    """The flat array of `shape` and `dtype` over `data`, which must hold exactly its elements."""
    if not (isinstance(dtype, DTypeRecord) and dtype.dtype is not None):
        raise pickle.UnpicklingError("a numpy array or scalar without a numeric dtype")
    if type(data) is not bytes:
        raise pickle.UnpicklingError("a numpy array whose data is not raw bytes (an object array)")
    ints = type(shape) is tuple and len(shape) <= MAX_ARRAY_DIMS and all(type(n) is int and n >= 0 for n in shape)
    count = math.prod(shape) if ints else -1
    if count < 0 or count * dtype.dtype.itemsize != len(data):
        raise pickle.UnpicklingError(f"a numpy array of shape {shown(shape)} over {len(data)} bytes")
    return np.frombuffer(data, dtype.dtype, count)


def _scalar(dtype, data) -> ArrayRecord:
    return ArrayRecord(_array(dtype, (), data).reshape(()))


def numpy_globals(protocol_5: bool) -> dict:
    """The allow-list entries of numpy's values under both module names; `protocol_5`: arrays as protocol 5 writes
    them too (a format written before Python 3.14 never holds them)."""
    found = {("numpy", "ndarray"): NDARRAY, ("numpy", "dtype"): DTypeRecord}
    for core in ("numpy.core", "numpy._core"):
        found |= {(f"{core}.multiarray", "_reconstruct"): _reconstruct, (f"{core}.multiarray", "scalar"): _scalar}
        if protocol_5:  # a method of NumpyBuilds, which counts the array's bytes
            found[(f"{core}.numeric", "_frombuffer")] = "frombuffer"
    return found


class NumpyBuilds:
    """The BUILD states numpy writes, for an unpickler that holds numpy values: a mixin that counts the bytes its
    arrays hold against the size of the file (`size`)."""

    def __init__(self, size: int):
        self.size, self.array_bytes = size, 0

    def build_numpy(self, target, state) -> bool:
        """BUILD on a numpy dtype or array (True), or on something else (False: the caller decides)."""
        if type(target) is DTypeRecord:
            target.set_order(state)
        elif type(target) is ArrayRecord:
            self._set_array(target, state)
        else:
            return False
        return True

    def _set_array(self, record: ArrayRecord, state) -> None:
        if record.array is not None or not (type(state) is tuple and len(state) == 5 and state[0] == 1):
            raise pickle.UnpicklingError("a numpy array given a state twice, or not numpy's (version 1, 5 fields)")
        _, shape, dtype, fortran, data = state
        if type(shape) is not tuple or type(fortran) is not bool:
            raise pickle.UnpicklingError("a numpy array whose shape is not a tuple or whose order is not a bool")
        flat = _array(dtype, shape, data)
        self.count_array_bytes(len(data))
        record.array = flat.reshape(shape, order="F" if fortran else "C")

    def frombuffer(self, buffer, dtype, shape, order) -> ArrayRecord:
        """`numpy.core.numeric._frombuffer`: an array made whole from its bytes (protocol 5)."""
        data = buffer.data if type(buffer) is InBandBuffer else buffer
        if order not in ("C", "F"):
            raise pickle.UnpicklingError("a numpy array (protocol 5) whose order is neither C nor F")
        flat = _array(dtype, shape, data)
        self.count_array_bytes(len(data))
        return ArrayRecord(flat.reshape(shape, order=order))

    def count_array_bytes(self, n: int) -> None:
        self.array_bytes += n
        if self.array_bytes > self.size:  # the same bytes, shared through the memo, made into several arrays
            raise pickle.UnpicklingError(f"arrays of {self.array_bytes} bytes in all from a file of {self.size}")

    def load_bytearray8(self):
        """BYTEARRAY8 as an InBandBuffer: its length is compared with the file before it is read (Python's own
        opcode allocates the declared length first)."""
        (size,) = struct.unpack("<Q", self.read(8))
        self.append(InBandBuffer(self.read(size)))


NUMPY_KINDS = {ArrayRecord: "numpy array", DTypeRecord: "numpy dtype", InBandBuffer: "in-band buffer"}
