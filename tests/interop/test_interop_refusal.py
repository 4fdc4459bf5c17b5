"""Malicious files are refused before anything in them runs. Every payload would create a marker file if it were
executed; each test checks the refusal names what was refused and that the marker does not exist."""

import builtins
import collections
import copyreg
import io
import os
import pickle
import subprocess
import warnings

import pytest
import torch
from interop_fixtures import generator_kwargs, network_pickle, persistent_tree

from ganforge.errors import UserError
from ganforge.interop import load_network
from ganforge.nets import Generator


class Call:
    """Pickles as the call `function(*args)`: what a malicious `__reduce__` does."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


PAYLOADS = {
    "posix.system": lambda marker: Call(os.system, f"touch {marker}"),
    "builtins.eval": lambda marker: Call(builtins.eval, f"open({str(marker)!r}, 'w')"),
    "builtins.exec": lambda marker: Call(builtins.exec, f"open({str(marker)!r}, 'w')"),
    "subprocess.call": lambda marker: Call(subprocess.call, ["touch", str(marker)]),
    "builtins.getattr": lambda marker: Call(getattr, Call(builtins.__import__, "os"), "system"),
}


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "payload-ran"
    yield path
    assert not path.exists(), "a payload from the file was executed"


def refused(path, match: str):
    with pytest.raises(UserError, match=match) as err:
        load_network(path)
    assert len(err.value.problems) == 1
    return err.value.problems[0]


@pytest.mark.parametrize("qualname", list(PAYLOADS))
def test_a_reduce_payload_anywhere_is_refused_by_name(tmp_path, marker, qualname):
    G = Generator(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)
    kwargs = {**generator_kwargs(G), "synthesis_kwargs": {"conv_clamp": PAYLOADS[qualname](marker)}}
    for data, family in (
        (network_pickle({"G_ema": PAYLOADS[qualname](marker)}), "StyleGAN2-ADA or StyleGAN3"),  # before any module
        (network_pickle({"G_ema": persistent_tree(G, kwargs)}), "StyleGAN2"),  # after G's blocks
    ):
        path = tmp_path / "evil.pkl"
        path.write_bytes(data)
        message = refused(path, f"refused: the pickle asks for {qualname}, which is not part of an NVlabs {family} ")
        assert "network pickle; ganforge never runs code from a file, and nothing from this one was run" in message


def test_unknown_globals_are_refused_even_when_harmless(tmp_path, marker):
    path = tmp_path / "network.pkl"
    path.write_bytes(b"\x80\x02ctraining.networks\nMappingNetwork\n)\x81.")  # GLOBAL, EMPTY_TUPLE, NEWOBJ, STOP
    refused(path, "asks for training.networks.MappingNetwork")
    path.write_bytes(pickle.dumps({"G_ema": torch.nn.Linear(2, 2)}))  # a real torch module is code too
    refused(path, r"asks for (torch|copyreg)\.")


def test_extension_codes_resolve_through_the_allow_list(tmp_path, marker):
    copyreg.add_extension("posix", "system", 0xF0)
    try:
        path = tmp_path / "network.pkl"
        command = f"touch {marker}".encode()
        path.write_bytes(b"\x80\x02\x82\xf0X" + len(command).to_bytes(4, "little") + command + b"\x85R.")
        refused(path, "asks for posix.system")
    finally:
        copyreg.remove_extension("posix", "system", 0xF0)


def test_persistent_ids_are_refused(tmp_path, marker):
    path = tmp_path / "network.pkl"
    path.write_bytes(b"\x80\x02X\x01\x00\x00\x00xQ.")  # BINPERSID: only torch's own loader may resolve these
    refused(path, "not a readable NVlabs network pickle")


def test_a_tensorflow_network_inside_a_pytorch_pickle_is_refused_by_name(tmp_path, marker):
    """A file is read as the kind its first global names; a TF Network later in a PyTorch pickle is not allowed."""
    path = tmp_path / "network.pkl"
    path.write_bytes(
        b"\x80\x02ctorch_utils.persistence\n_reconstruct_persistent_obj\n0cdnnlib.tflib.network\nNetwork\n)\x81."
    )
    refused(path, "asks for dnnlib.tflib.network.Network, which is not part of an NVlabs StyleGAN2-ADA or StyleGAN3")


class NestedStorage:
    """Pickles as torch does a tensor storage: `torch.storage._load_from_bytes(data)`."""

    def __init__(self, data: bytes):
        self.data = data

    def __reduce__(self):
        return torch.storage._load_from_bytes, (self.data,)


def tensor_call(storage, offset=0, size=(4,), stride=(1,)):
    return Call(torch._utils._rebuild_tensor_v2, storage, offset, size, stride, False, collections.OrderedDict())


def saved(obj, zip_format: bool) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=zip_format)
    return buffer.getvalue()


@pytest.mark.parametrize("zip_format", [False, True])
def test_a_payload_inside_a_nested_storage_is_refused(tmp_path, marker, zip_format):
    path = tmp_path / "network.pkl"
    evil = NestedStorage(saved(Call(os.system, f"touch {marker}"), zip_format))
    path.write_bytes(network_pickle({"G_ema": tensor_call(evil)}))
    refused(path, r"a nested tensor storage is not plain tensor data \(torch.load with weights_only=True refused")


def test_tensor_rebuilds_are_checked(tmp_path, marker):
    untyped = torch.zeros(4).untyped_storage()  # torch.load cannot rebuild it alone: not what a tensor holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage is deprecated, but it is what a tensor in a pickle holds
        storage = NestedStorage(saved(torch.zeros(4).storage(), zip_format=False))
    cases = {
        "a nested storage holds dict": tensor_call(NestedStorage(saved({"x": torch.zeros(2)}, zip_format=False))),
        "a nested tensor storage is not plain tensor data": tensor_call(
            NestedStorage(saved(untyped, zip_format=False))
        ),
        "a tensor whose storage is not a tensor storage": tensor_call("/etc/passwd"),
        "a tensor reaches element 6 of a storage of 4": tensor_call(storage, offset=2, size=(5,)),
        "a tensor reaches element 9": tensor_call(storage, size=(2, 2), stride=(8, 1)),
        "malformed offset, size or stride": tensor_call(storage, offset=-1),
    }
    path = tmp_path / "network.pkl"
    for message, payload in cases.items():
        path.write_bytes(network_pickle({"G_ema": payload}))
        refused(path, message)


def test_a_payload_in_a_torch_checkpoint_is_refused(tmp_path, marker):
    path = tmp_path / "checkpoint.pt"
    for zip_format in (True, False):
        path.write_bytes(saved({"g_ema": {"style.1.weight": Call(os.system, f"touch {marker}")}}, zip_format))
        message = refused(path, "refused: the checkpoint asks for posix.system")
        assert "nothing from this one was run" in message
