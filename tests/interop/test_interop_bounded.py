"""The readers of network files hand out nothing but what the file supplied, and their work is bounded by the file:
each guard of the allow-list unpickler, the module walk, the architecture limits and the rosinality zip checks, one
test each that fails without it."""

import collections
import io
import pickle
import struct
import warnings
import zipfile

import pytest
import torch
from interop_fixtures import (
    EasyDict,
    Persistent,
    generator_kwargs,
    network_pickle,
    official_names,
    persistent_tree,
    random_weights,
)
from rosinality_reference import generator_state

from ganforge.errors import UserError
from ganforge.interop import import_network, load_network, official_pickle
from ganforge.nets import Generator
from ganforge.snapshot import load_snapshot

ARCH = dict(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)


class Call:
    """Pickles as `function(*args)`, then BUILD with `state` when given, then SETITEMS with `items` when given."""

    def __init__(self, function, *args, state=None, items=None):
        self.function, self.args, self.state, self.items = function, args, state, items

    def __reduce__(self):
        return self.function, self.args, self.state, None, None if self.items is None else iter(self.items)


class Storage:
    """Pickles as NVlabs files hold a storage: `torch.storage._load_from_bytes(torch.save(storage))`."""

    def __init__(self, values: torch.Tensor):
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage is deprecated, but it is what a pickled tensor holds
            torch.save(values.storage(), buffer, _use_new_zipfile_serialization=False)
        self.data = buffer.getvalue()

    def __reduce__(self):
        return torch.storage._load_from_bytes, (self.data,)


def tensor(storage, size=(1,), stride=(1,), **extra):
    return Call(torch._utils._rebuild_tensor_v2, storage, 0, size, stride, False, collections.OrderedDict(), **extra)


@pytest.fixture(scope="module")
def G():
    return random_weights(Generator(**ARCH), seed=1)


def tree_of(G, **kwargs_changes):
    kwargs = generator_kwargs(G)
    for name, value in kwargs_changes.items():
        group, _, key = name.rpartition("__")
        (kwargs[group] if group else kwargs)[key] = value
    return persistent_tree(G, kwargs)


def conv1(tree) -> dict:
    """The parameters of the 8x8 block's conv1 (weight [4, 4, 3, 3])."""
    return tree.state["_modules"]["synthesis"].state["_modules"]["b8"].state["_modules"]["conv1"].state["_parameters"]


def widened(tree):
    """conv1.weight made from a 1-element storage, then widened by BUILD (Tensor.__setstate__ runs set_)."""
    storage = Storage(torch.zeros(1))
    conv1(tree)["weight"] = tensor(storage, state=(tensor(storage), 0, (4, 4, 3, 3), (36, 9, 3, 1)))
    return tree


def refused(tmp_path, data: bytes, match: str) -> str:
    path = tmp_path / "network.pkl"
    path.write_bytes(data)
    with pytest.raises(UserError, match=match) as err:
        load_network(path)
    return err.value.problems[0]


def test_build_on_a_tensor_is_refused_and_nothing_is_written(G, tmp_path):
    path = tmp_path / "network.pkl"
    path.write_bytes(network_pickle({"G_ema": widened(tree_of(G))}))
    with pytest.raises(UserError, match=r"the pickle sets the state of a tensor \(BUILD\), which a network pickle"):
        import_network(path, tmp_path / "out.safetensors")
    assert not (tmp_path / "out.safetensors").exists()


def test_the_storage_check_catches_a_widened_tensor_whatever_widened_it(G, tmp_path, monkeypatch):
    """Were BUILD honoured on tensors again, the storage check after loading still finds the widened storage."""
    honouring = official_pickle._RestrictedUnpickler.build

    def build_tensors_too(unpickler, target, state):
        if isinstance(target, torch.Tensor):
            return target.__setstate__(state)
        return honouring(unpickler, target, state)

    monkeypatch.setattr(official_pickle._RestrictedUnpickler, "build", build_tensors_too)
    message = refused(tmp_path, network_pickle({"G_ema": widened(tree_of(G))}), "storage now holds")
    assert "but the file supplied 4" in message


def test_build_and_items_only_where_a_network_pickle_needs_them(G, tmp_path):
    meta = dict(type="class", version=6, module_src="", class_name="Generator", state={})
    record = Call(Persistent("x", {}).__reduce__()[0], meta, state={"class_name": 7})
    refused(tmp_path, network_pickle({"G_ema": record}), r"sets the state of a network module record \(BUILD\)")
    tree = tree_of(G)
    conv1(tree)["weight"] = tensor(Storage(torch.zeros(144)), (4, 4, 3, 3), (36, 9, 3, 1), items=[(0, 5.0)])
    refused(tmp_path, network_pickle({"G_ema": tree}), "SETITEMS? on a tensor")
    with official_names():  # an EasyDict given an empty state, as older Pythons pickled attribute-less objects
        empty_state = pickle.dumps({"G_ema": Call(EasyDict, state={})}, protocol=2)
    refused(tmp_path, empty_state, "not an NVlabs network pickle")  # read, then found to hold no network


def test_keys_are_plain_values_whose_hashing_costs_their_length(G, tmp_path):
    tree = tree_of(G, synthesis_kwargs__x=Call(collections.OrderedDict, items=[((1, 2), 1)]))
    refused(tmp_path, network_pickle({"G_ema": tree}), "a dict key or set item that is not a plain value")
    key = ()
    for _ in range(60):  # hashing it would visit 2^60 tuples
        key = (key, key)
    tree = tree_of(G, synthesis_kwargs__x=Call(collections.OrderedDict, items=[(key, 1)]))
    refused(tmp_path, network_pickle({"G_ema": tree}), "a dict key or set item that is not a plain value")


@pytest.mark.parametrize("opcode", [b"\x8e", b"\x8d", b"\x95", b"B", b"X", b"T"])
def test_declared_lengths_are_compared_with_the_file(tmp_path, opcode):
    width = "<Q" if opcode in (b"\x8e", b"\x8d", b"\x95") else "<I"
    declared = 2**62 if width == "<Q" else 2**31 - 1
    data = b"\x80\x04" + opcode + struct.pack(width, declared) + b"\x00" * 8
    refused(tmp_path, data, f"an opcode declares {declared} bytes where 8 remain in the file")


@pytest.mark.parametrize(
    "stream, opcode, target",
    [
        (b"]K\x07a(K\x00K\x01u", "SETITEMS", "list"),  # [7], then item 0 set to 1: a list would take it
        (b"}(K\x00e", "APPENDS", "dict"),
        (b"](K\x00\x90", "ADDITEMS", "list"),
    ],
    ids=("setitems", "appends", "additems"),
)
def test_items_after_a_mark_go_only_into_their_own_kind_of_container(tmp_path, stream, opcode, target):
    """SETITEMS, APPENDS and ADDITEMS change the object before their mark: on any other kind of object each is
    refused by name, before that object's own method is called."""
    refused(tmp_path, b"\x80\x04" + stream + b".", f"{opcode} on a {target}, which a network pickle never does")


def test_a_bytearray_is_read_only_as_far_as_the_file_holds_and_kept_only_in_an_array(tmp_path):
    """Python's unpickler allocates a BYTEARRAY8's declared length before reading it. A network pickle written with
    protocol 5 holds its numpy arrays' bytes this way, so the reader compares the length with the file first, and
    keeps the bytes only as the contents of an array."""
    declared_huge = b"\x80\x05\x96" + struct.pack("<Q", 2**60) + b"abcd."
    refused(tmp_path, declared_huge, f"an opcode declares {2**60} bytes where 5 remain in the file")
    loose = b"\x80\x05\x96" + struct.pack("<Q", 4) + b"abcd."
    refused(tmp_path, loose, "in-band buffer in the top level, outside the layer attributes where NVlabs' networks")


def test_a_tensor_repeating_its_elements_is_refused(G, tmp_path):
    tree = tree_of(G)
    conv1(tree)["weight"] = tensor(Storage(torch.zeros(1)), (4, 4, 3, 3), (0, 0, 0, 0))
    refused(tmp_path, network_pickle({"G_ema": tree}), r"a tensor of 144 elements over a storage of 1 \(elements")


def shared_modules(levels: int, width: int) -> Persistent:
    """`levels` modules deep, each level `width` times the same module: width^levels paths, `levels` modules."""
    empty = {"_parameters": {}, "_buffers": {}, "_modules": {}}
    module = Persistent("Conv2dLayer", empty)
    for _ in range(levels):
        module = Persistent("SynthesisBlock", {**empty, "_modules": {f"c{i}": module for i in range(width)}})
    return module


def test_a_module_reached_twice_is_refused_after_one_visit(G, tmp_path):
    tree = tree_of(G)
    tree.state["_modules"]["synthesis"].state["_modules"]["b8"] = shared_modules(1, 2)
    refused(tmp_path, network_pickle({"G_ema": tree}), r"module synthesis.b8.c0 appears twice in the module tree")
    tree.state["_modules"]["synthesis"].state["_modules"]["b8"] = shared_modules(5, 100)  # 10^10 paths
    twice = r"module synthesis.b8.c99.c99.c99.c99.c98 appears twice in the module tree"  # the first revisit
    refused(tmp_path, network_pickle({"G_ema": tree}), twice)
    module = Persistent("SynthesisBlock", {"_parameters": {}, "_buffers": {}, "_modules": {}})
    module.state["_modules"]["loop"] = module  # a cycle
    tree.state["_modules"]["synthesis"].state["_modules"]["b8"] = module
    refused(tmp_path, network_pickle({"G_ema": tree}), r"module synthesis.b8.loop appears twice")


def test_constructor_arguments_beyond_the_limits_are_refused_before_building(G, tmp_path):
    tree = tree_of(G, mapping_kwargs__num_layers=10**7, synthesis_kwargs__channel_max=4096)
    path = tmp_path / "network.pkl"
    path.write_bytes(network_pickle({"G_ema": tree}))
    with pytest.raises(UserError) as err:
        load_network(path)
    assert err.value.problems == [
        f"{path}: unsupported architecture, channel_max=4096: must be an integer from 1 to 1024",
        f"{path}: unsupported architecture, mapping_layers=10000000: must be an integer from 1 to 32",
    ]


def test_an_architecture_larger_than_the_file_is_refused_before_it_is_allocated(G, tmp_path):
    tree = tree_of(G, img_resolution=1024, synthesis_kwargs__channel_max=1024, synthesis_kwargs__channel_base=2**20)
    message = refused(tmp_path, network_pickle({"G_ema": tree}), "its architecture has .* parameters, more than a file")
    assert "truncated or its architecture was altered" in message


def test_messages_show_untrusted_values_in_bounded_text(G, tmp_path):
    shared = [0]
    for _ in range(60):  # repr() of it would be 2^60 elements long
        shared = [shared, shared]
    tree = tree_of(G, synthesis_kwargs__channel_base=shared, synthesis_kwargs__kernel_size=10**5000)
    path = tmp_path / "network.pkl"
    path.write_bytes(network_pickle({"G_ema": tree}))
    with pytest.raises(UserError) as err:
        load_network(path)
    assert "synthesis_kwargs.channel_base=<a list of 2 items>: not a number" in err.value.problems[0]
    assert "kernel_size=<an integer of 16610 bits>: ganforge implements only 3" in err.value.problems[1]


# --- rosinality checkpoints -----------------------------------------------------------------------------------------


def saved(checkpoint, zip_format=True) -> bytes:
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer, _use_new_zipfile_serialization=zip_format)
    return buffer.getvalue()


def test_zip_members_are_checked_before_torch_reads_them(tmp_path):
    data = saved({"g_ema": generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1)})
    path = tmp_path / "g.pt"
    first = zipfile.ZipFile(io.BytesIO(data)).infolist()[0]
    start = first.header_offset + 30 + len(first.filename.encode()) + len(first.extra)
    flipped = bytearray(data)
    flipped[start + first.file_size // 2] ^= 0x20  # torch checks no CRC: this edited pickle would be read
    path.write_bytes(bytes(flipped))
    with pytest.raises(UserError, match=r"a damaged zip archive \(Bad CRC-32 for file 'archive/data.pkl'\)"):
        load_network(path)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            archive.writestr(info.filename, source.read(info), compress_type=zipfile.ZIP_DEFLATED)
    path.write_bytes(out.getvalue())
    with pytest.raises(UserError, match="member archive/data.pkl is compressed; torch.save stores its members"):
        load_network(path)


def test_rosinality_tensors_repeating_their_elements_are_refused(tmp_path):
    state = generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1)
    state["input.input"] = torch.zeros(1).expand(1, 4096, 4, 4)  # 4,096 channels from one stored element
    path = tmp_path / "g.pt"
    path.write_bytes(saved({"g_ema": state}))
    with pytest.raises(UserError, match=r"g_ema.input.input has 65536 elements over a storage of 4 bytes"):
        load_network(path)


def test_rosinality_architectures_beyond_the_limits_are_refused(tmp_path):
    state = generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1)
    state |= {f"style.{i}.weight": torch.zeros(4, 4) for i in range(3, 300)}
    path = tmp_path / "g.pt"
    path.write_bytes(saved({"g_ema": state}))
    with pytest.raises(UserError, match="mapping_layers=299: must be an integer from 1 to 32"):
        load_network(path)


def test_snapshots_readers_share_the_limits(G, tmp_path):
    from ganforge.snapshot import save_snapshot

    save_snapshot(tmp_path / "G.safetensors", G, {})
    assert load_snapshot(tmp_path / "G.safetensors")[0].config == G.config


def test_lengths_declared_in_a_legacy_checkpoint_are_compared_with_the_file(tmp_path):
    """torch.save's format before PyTorch 1.6 (rosinality's released checkpoints): torch's reader would allocate a
    declared length before finding the file shorter."""
    data = saved({"g_ema": generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1)}, zip_format=False)
    name = b"X\x05\x00\x00\x00g_ema"  # BINUNICODE "g_ema"
    assert data.count(name) == 1
    path = tmp_path / "g.pt"
    path.write_bytes(data.replace(name, b"X\xff\xff\xff\xffg_ema"))
    with pytest.raises(UserError, match="not a readable PyTorch checkpoint .the checkpoint declares 4294967295 bytes"):
        load_network(path)
