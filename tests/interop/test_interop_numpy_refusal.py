"""numpy values in NVlabs' PyTorch pickles: the reader takes exactly what numpy writes for the arrays StyleGAN3's
layers keep ([width, height] pairs at SynthesisInput.size, SynthesisLayer.in_size and out_size) and refuses every
twin of it: other arguments, other types, other shapes, other places, bytes that do not match."""

import collections
import os

import numpy as np
import pytest
from interop_fixtures import network_pickle, persistent_tree
from test_interop_stylegan3 import _generator, _official_kwargs

from ganforge.errors import UserError
from ganforge.interop import load_network

RECONSTRUCT = np._core.multiarray._reconstruct  # pickled by name: numpy._core.multiarray._reconstruct
FROMBUFFER = np._core.numeric._frombuffer


class Raw:
    """Pickles as the call `function(*args)`, then BUILD with `state` when one is given: numpy's own reductions
    with other arguments or states than numpy writes."""

    def __init__(self, function, args, state=None):
        self.function, self.args, self.state = function, args, state

    def __reduce__(self):
        return (self.function, self.args) if self.state is None else (self.function, self.args, self.state)


def raw_array(shape, data: bytes, cls=np.ndarray, dtype: str = "i8") -> Raw:
    return Raw(RECONSTRUCT, (cls, (0,), b"b"), (1, shape, np.dtype(dtype), False, data))


@pytest.fixture(scope="module")
def G():
    return _generator("t")


def tree(G, **changes):
    """G's official tree with `changes`: "input__size" sets SynthesisInput's attribute, "kwargs__x" an init kwarg,
    "mapping_fc0__size" the first mapping layer's attribute."""
    top = persistent_tree(G, _official_kwargs(G), class_name="Generator", resample_filters=False)
    for key, value in changes.items():
        where, name = key.split("__")
        if where == "kwargs":
            top.state["_init_kwargs"][name] = value
            continue
        module = top.state["_modules"]["synthesis" if where == "input" else "mapping"].state["_modules"]
        module[{"input": "input", "mapping_fc0": "fc0"}[where]].state[name] = value
    return top


def refused(tmp_path, data: bytes, match: str) -> None:
    path = tmp_path / "network.pkl"
    path.write_bytes(data)
    with pytest.raises(UserError, match=match) as err:
        load_network(path)
    assert len(err.value.problems) == 1 and "GANFORGE_FIXTURE_SOURCE_RAN" not in os.environ


def test_the_arrays_numpy_writes_where_stylegan3_keeps_them_are_read(G, tmp_path):
    for protocol in (4, 5):
        path = tmp_path / f"p{protocol}.pkl"
        path.write_bytes(network_pickle({"G_ema": tree(G, input__size=np.array([36, 36]))}, protocol=protocol))
        assert load_network(path)[0].config == G.config


def test_an_array_anywhere_else_is_refused(G, tmp_path):
    pair = np.array([16, 16])
    outside = "outside the layer attributes where NVlabs' networks keep arrays"
    refused(
        tmp_path,
        network_pickle({"G_ema": tree(G, kwargs__x=pair)}),
        f"numpy array in Generator._init_kwargs, {outside}",
    )
    refused(tmp_path, network_pickle({"G_ema": tree(G, mapping_fc0__size=pair)}), "FullyConnectedLayer.size, outside")
    refused(tmp_path, network_pickle({"G_ema": tree(G), "extra": [pair]}), f"numpy array in the top level, {outside}")
    shared = np.array([36, 36])  # one array through the memo: in its place and in another
    both = tree(G, input__size=shared, kwargs__x=shared)
    refused(tmp_path, network_pickle({"G_ema": both}), f"numpy array in Generator._init_kwargs, {outside}")


@pytest.mark.parametrize(
    "value, found",
    [
        (np.array([16, 16, 16]), r"i8 \(3,\)"),
        (np.array([[16, 16]]), r"i8 \(1, 2\)"),
        (np.array([16.0, 16.0]), r"f8 \(2,\)"),
        (Raw(RECONSTRUCT, (np.ndarray, (0,), b"b")), "never given"),  # made, never given its contents
    ],
)
def test_in_its_place_only_a_pair_of_integers(G, tmp_path, value, found):
    message = f"SynthesisInput.size is a numpy array \\({found}\\), not a \\[width, height\\] pair"
    refused(tmp_path, network_pickle({"G_ema": tree(G, input__size=value)}), message)


@pytest.mark.parametrize(
    "value, match",
    [
        (raw_array((2,), bytes(16), cls=collections.OrderedDict), "a numpy array reconstruction with other arguments"),
        (Raw(RECONSTRUCT, (np.ndarray, (1,), b"b")), "a numpy array reconstruction with other arguments"),
        (raw_array((2,), bytes(8)), r"a numpy array of shape \(2,\) over 8 bytes"),
        (raw_array((2**40,), bytes(16)), r"a numpy array of shape \(1099511627776,\) over 16 bytes"),
        (raw_array((1,) * 9 + (2,), bytes(16)), "a numpy array of shape"),
        (np.array([1, 2], dtype=object), "a numpy dtype that is not a plain numeric type"),
        (np.array([16, 16], dtype=">i8"), "a numpy i8 dtype with another byte order or layout than numpy's"),
        (raw_array((2,), [16, 16]), "a numpy array whose data is not raw bytes"),
        (Raw(FROMBUFFER, (bytes(16), np.dtype("i8"), (2,), "A")), r"order is neither C nor F"),
        (Raw(FROMBUFFER, (bytes(8), np.dtype("i8"), (2,), "C")), r"a numpy array of shape \(2,\) over 8 bytes"),
    ],
)
def test_what_numpy_never_writes_is_refused(G, tmp_path, value, match):
    refused(tmp_path, network_pickle({"G_ema": tree(G, input__size=value)}), match)


def test_bytes_shared_through_the_memo_make_no_more_array_than_the_file_holds(G, tmp_path):
    data = bytes(2**16)
    for arrays in (
        [raw_array((2**13,), data) for _ in range(40)],  # 40 arrays over one memoised 64 KiB string
        [Raw(FROMBUFFER, (data, np.dtype("i8"), (2**13,), "C")) for _ in range(40)],  # as protocol 5 makes them
    ):
        message = "arrays of .* bytes in all from a file of"
        refused(tmp_path, network_pickle({"G_ema": tree(G), "extra": arrays}), message)


def test_a_refused_global_names_the_family_the_file_had_shown(G, tmp_path):
    payload = Raw(os.system, ("true",))
    refused(tmp_path, network_pickle({"G_ema": tree(G, kwargs__x=payload)}), "not part of an NVlabs StyleGAN3 network")
