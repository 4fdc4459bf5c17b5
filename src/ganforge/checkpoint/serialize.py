"""Nested training state <-> (a JSON skeleton, a flat dict of tensors for safetensors). No pickle anywhere.

The skeleton is plain JSON in which every tensor is replaced by `{"__tensor__": name}`, a reference into the
safetensors file. The few Python shapes JSON cannot express are tagged so that they come back exactly:
dicts whose keys are not all strings (optimizer state is keyed by int parameter index) become
`{"__items__": [[key, value], ...]}`, tuples (Adam's betas) `{"__tuple__": [...]}`, and non-finite floats
`{"__float__": "nan" | "inf" | "-inf"}` (so the file stays strict JSON).
"""

import math

import torch

_TENSOR = "__tensor__"
_TUPLE = "__tuple__"
_ITEMS = "__items__"
_FLOAT = "__float__"
_MARKERS = frozenset({_TENSOR, _TUPLE, _ITEMS, _FLOAT})


def flatten(state) -> tuple[object, dict[str, torch.Tensor]]:
    """Split `state` into a JSON-serialisable skeleton and {name: contiguous CPU tensor} for safetensors.

    Leaves may be tensors, None, bool, int, float, str; containers lists, tuples and dicts with str or int keys.
    Anything else raises TypeError naming where it sits, so a new kind of state fails at the first save.
    """
    tensors: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    skeleton = _encode(state, "", tensors, storages)
    return skeleton, tensors


def unflatten(skeleton, tensors: dict[str, torch.Tensor]):
    """Inverse of `flatten`. Raises ValueError (with a bounded message) when the skeleton is malformed, refers to a
    tensor the file does not hold or to one tensor twice, or leaves a tensor of the file unused: the writer stores
    each tensor once and only what the state holds."""
    used: set[str] = set()
    value = _decode(skeleton, tensors, used)
    if len(used) != len(tensors):
        raise ValueError(f"{len(tensors) - len(used)} tensor(s) of the file are not part of the state")
    return value


def describe(value) -> str:
    """A short, bounded description of an untrusted value for a message: scalars shortened, containers by size."""
    if isinstance(value, torch.Tensor):
        shape = list(value.shape) if value.dim() <= 8 else f"{value.dim()} dimensions"
        return f"a {str(value.dtype).removeprefix('torch.')} tensor of shape {shape}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} entries"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, str) and len(value) > 30:
        return f"{value[:30]!r}... ({len(value)} characters)"
    return repr(value)


def _decode(skeleton, tensors: dict, used: set):
    if isinstance(skeleton, list):
        return [_decode(item, tensors, used) for item in skeleton]
    if not isinstance(skeleton, dict):
        return skeleton
    tagged = _MARKERS & skeleton.keys()
    if not tagged:
        return {key: _decode(value, tensors, used) for key, value in skeleton.items()}
    if len(skeleton) != 1:
        raise ValueError(f"a tagged value ({', '.join(sorted(tagged))}) with other keys beside its tag")
    (tag,) = tagged
    payload = skeleton[tag]
    if tag == _TENSOR:
        return _tensor(payload, tensors, used)
    if tag == _FLOAT:
        return _parse_nonfinite(payload)
    if not isinstance(payload, list):
        raise ValueError(f"{tag} holds {describe(payload)}, not a list")
    if tag == _TUPLE:
        return tuple(_decode(item, tensors, used) for item in payload)
    return dict(_item(pair, tensors, used) for pair in payload)


def _tensor(name, tensors: dict, used: set) -> torch.Tensor:
    if not isinstance(name, str) or name not in tensors:
        raise ValueError(f"a reference to a tensor the file does not hold ({describe(name)})")
    if name in used:
        raise ValueError(f"tensor {describe(name)} is referenced twice")
    used.add(name)
    return tensors[name]


def _item(pair, tensors: dict, used: set) -> tuple:
    if not (isinstance(pair, list) and len(pair) == 2):
        raise ValueError(f"{_ITEMS} holds {describe(pair)}, not a [key, value] pair")
    return _check_key(pair[0]), _decode(pair[1], tensors, used)


def _encode(value, path: str, tensors: dict, storages: set):
    if isinstance(value, torch.Tensor):
        return {_TENSOR: _add_tensor(value, path, tensors, storages)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_FLOAT: repr(float(value))}
    if isinstance(value, (list, tuple)):
        items = [_encode(item, f"{path}/{i}", tensors, storages) for i, item in enumerate(value)]
        return {_TUPLE: items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return _encode_dict(value, path, tensors, storages)
    raise TypeError(
        f"checkpoint state at '{path or '/'}': cannot store a {type(value).__qualname__}; "
        "use tensors, None, bool, int, float, str, lists, tuples or dicts with str/int keys"
    )


def _encode_dict(value: dict, path: str, tensors: dict, storages: set):
    for key in value:
        if type(key) not in (str, int):
            raise TypeError(
                f"checkpoint state at '{path or '/'}': dict key {key!r} is a {type(key).__qualname__}; "
                "only str and int keys are supported"
            )
    if all(type(key) is str for key in value) and not (_MARKERS & value.keys()):
        return {key: _encode(item, f"{path}/{key}", tensors, storages) for key, item in value.items()}
    return {_ITEMS: [[key, _encode(item, f"{path}/{key}", tensors, storages)] for key, item in value.items()]}


def _add_tensor(value: torch.Tensor, path: str, tensors: dict, storages: set) -> str:
    if value.layout != torch.strided:
        raise TypeError(f"checkpoint state at '{path}': {value.layout} tensors are not supported; densify first")
    tensor = value.detach().cpu()
    # safetensors refuses tensors that share memory and stores only whole contiguous buffers: copy views.
    storage = tensor.untyped_storage()
    whole = tensor.is_contiguous() and tensor.storage_offset() == 0 and storage.nbytes() == tensor.nbytes
    if not whole or (storage.data_ptr() != 0 and storage.data_ptr() in storages):
        tensor = tensor.clone(memory_format=torch.contiguous_format)
    storages.add(tensor.untyped_storage().data_ptr())
    # Readable names (`G/mapping.fc0.weight`) help anyone inspecting the file; the skeleton holds the exact name.
    base = path.lstrip("/") or "tensor"
    name, copies = base, 0
    while name in tensors:
        copies += 1
        name = f"{base}#{copies}"
    tensors[name] = tensor
    return name


def _parse_nonfinite(text) -> float:
    if text not in ("nan", "inf", "-inf"):
        raise ValueError(f"not a non-finite float: {describe(text)}")
    return float(text)


def _check_key(key):
    if type(key) not in (str, int):
        raise ValueError(f"dict key {describe(key)} is neither str nor int")
    return key
