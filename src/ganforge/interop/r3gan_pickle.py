"""Read R3GAN's released network pickles (github.com/brownvc/R3GAN) as data, without executing anything from the file.

R3GAN's training loop writes `pickle.dump` of {"G", "D", "G_ema", "training_set_kwargs", "cur_nimg", "G_opt_state",
"D_opt_state"}. Its networks are plain torch modules (not NVlabs' "persistent" objects), so each one pickles by the
default reduction: the global of its class (`training.networks.Generator`, `R3GAN.Networks.ResidualBlock`,
`torch.nn.modules.conv.Conv2d`, ...), NEWOBJ (an empty instance), then BUILD with the module's `__dict__` (training
flag, `_parameters` / `_buffers` / `_modules`, hook dicts, plain attributes such as z_dim or a stage's DataType).
Python's unpickler would import each class and run its `__setstate__`; a file can therefore name anything.

Here unpickling resolves only an allow-list of globals:

    the module classes of R3GAN's networks (MODULE_CLASSES)  -> ModuleClass, a name; NEWOBJ of it makes a ModuleRecord
    copyreg.__newobj__                                       -> the same, for the REDUCE form of NEWOBJ
    torch.float32, torch.bfloat16                            -> themselves (a stage's DataType)
    tensors, storages, OrderedDict, set, numpy values        -> as in NVlabs' pickles (`official_pickle.ALLOWED`)

Every other global is refused before anything is imported or called; `read_r3gan_pickle` raises a UserError naming
it. A ModuleRecord is made empty, with no arguments, and BUILD sets its state exactly once, to a dict with string
keys, and must have done so by the end of the file; any other BUILD follows `official_pickle`'s rules (numpy values
only), and tensors are rebuilt and their storages checked after loading as there. The optimizer states are plain
dicts of tensors and numbers: they are parsed under the same rules and not used. What the records hold is checked
against R3GAN's architecture by `interop.r3gan`.
"""

import dataclasses
import pickle
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop import official_pickle
from ganforge.interop.official_pickle import PersistentRecord
from ganforge.interop.restricted_pickle import (
    DECODE_ERRORS,
    RefusedGlobal,
    RestrictedUnpickler,
    decode_detail,
    unpickle,
)

# The classes of a released snapshot's networks (R3GAN/Networks.py with the CUDA operators its aliases pick, and
# training/networks.py's wrappers), by module.
MODULE_CLASSES = {
    "training.networks": ("Generator", "Discriminator"),
    "R3GAN.Networks": ("Generator", "Discriminator", "GeneratorStage", "DiscriminatorStage", "GenerativeBasis",
                       "DiscriminativeBasis", "UpsampleLayer", "DownsampleLayer", "ResidualBlock", "Convolution"),
    "R3GAN.FusedOperators": ("BiasedActivationCUDA",),
    "R3GAN.Resamplers": ("InterpolativeUpsamplerCUDA", "InterpolativeDownsamplerCUDA"),
    "torch.nn.modules.conv": ("Conv2d",),
    "torch.nn.modules.linear": ("Linear",),
    "torch.nn.modules.container": ("ModuleList",),
}  # fmt: skip
# Globals shared with NVlabs' pickles: tensors, their storages, containers, numpy values (kept raw).
SHARED_GLOBALS = (
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"),
    ("torch.storage", "_load_from_bytes"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
)
DATA_TYPES = {("torch", "float32"): torch.float32, ("torch", "bfloat16"): torch.bfloat16}


@dataclasses.dataclass
class ModuleRecord(PersistentRecord):
    """One torch module of a released R3GAN network as data: its class's qualified name and its `__dict__`, set
    once by BUILD (`built`)."""

    built: bool = False


@dataclasses.dataclass(frozen=True)
class ModuleClass:
    """An allowed module class, by name only: nothing is imported. The pickle may only make it empty (NEWOBJ)."""

    name: str

    def __call__(self, *args, **kwargs):  # REDUCE, INST and OBJ call their class
        raise pickle.UnpicklingError(f"the pickle calls the module class {self.name}, which a released R3GAN pickle "
                                     "never does (it makes modules empty and sets their state)")  # fmt: skip


def new_module(cls, *args) -> ModuleRecord:
    """NEWOBJ (`cls.__new__(cls, *args)`): an empty record of an allowed module class, made without arguments."""
    if type(cls) is not ModuleClass:
        raise pickle.UnpicklingError("the pickle makes an object (NEWOBJ) of something that is not a module class")
    if args:
        raise pickle.UnpicklingError(f"the pickle makes a {cls.name} with arguments; torch modules take none")
    return ModuleRecord(cls.name, {})


ALLOWED = {
    **{key: official_pickle.ALLOWED[key] for key in SHARED_GLOBALS},
    **DATA_TYPES,
    ("copyreg", "__newobj__"): new_module,
    **{(module, name): ModuleClass(f"{module}.{name}") for module, names in MODULE_CLASSES.items() for name in names},
}


# The NVlabs reader's unpickler, for its tensor rebuilding and BUILD rules, with this allow-list.
class _R3GANUnpickler(official_pickle._RestrictedUnpickler):
    allowed = ALLOWED
    format_name = "released R3GAN network pickle"

    def __init__(self, file, size: int):
        super().__init__(file, size)
        self.records: list[ModuleRecord] = []

    def find_class(self, module: str, name: str):
        found = super().find_class(module, name)
        return self._newobj if found is new_module else found  # records what it makes, as NEWOBJ does

    def _newobj(self, cls, *args) -> ModuleRecord:
        return self._new(cls, args)

    def load_newobj(self):
        args, cls = self.stack.pop(), self.stack.pop()
        self.append(self._new(cls, args))

    def load_newobj_ex(self):
        kwargs, args, cls = self.stack.pop(), self.stack.pop(), self.stack.pop()
        if kwargs:
            raise pickle.UnpicklingError("the pickle makes an object with keyword arguments (NEWOBJ_EX)")
        self.append(self._new(cls, args))

    def _new(self, cls, args) -> ModuleRecord:
        if not isinstance(args, tuple):
            raise pickle.UnpicklingError("NEWOBJ with arguments that are not a tuple")
        record = new_module(cls, *args)
        self.records.append(record)
        return record

    def build(self, target, state) -> None:
        if type(target) is not ModuleRecord:
            super().build(target, state)
        elif target.built:
            raise pickle.UnpicklingError(f"the pickle sets the state of a {target.class_name} twice (BUILD)")
        elif type(state) is not dict or not all(type(key) is str for key in state):
            raise pickle.UnpicklingError(f"the state of a {target.class_name} is not a dict of attributes")
        else:
            target.state, target.built = state, True


_R3GANUnpickler.dispatch = type(_R3GANUnpickler.dispatch)(_R3GANUnpickler.dispatch)  # refuses unknown opcodes too
_R3GANUnpickler.dispatch[pickle.NEWOBJ[0]] = _R3GANUnpickler.load_newobj
_R3GANUnpickler.dispatch[pickle.NEWOBJ_EX[0]] = _R3GANUnpickler.load_newobj_ex
_R3GANUnpickler.dispatch[pickle.BYTEARRAY8[0]] = RestrictedUnpickler.load_bytearray8  # no protocol-5 arrays here


def read_r3gan_pickle(path: Path):
    """The object graph of a released R3GAN snapshot, built from allowed data only; UserError for anything else."""
    try:
        data, unpickler = unpickle(path, _R3GANUnpickler)
        official_pickle._check_storages(unpickler.built)
        if not all(record.built for record in unpickler.records):
            raise pickle.UnpicklingError("a module whose state is never set (no BUILD)")
    except RefusedGlobal as err:
        raise UserError(
            f"{path}: refused: the pickle asks for {err.qualname}, which is not part of a released R3GAN network "
            "pickle; ganforge never runs code from a file, and nothing from this one was run"
        ) from None
    except DECODE_ERRORS as err:
        raise UserError(
            f"{path}: not a readable R3GAN network pickle ({decode_detail(err)}); nothing from it was run"
        ) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    return data
