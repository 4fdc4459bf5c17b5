"""Hostile network files against every command that reads them: NVlabs pickles (PyTorch and TensorFlow-era),
rosinality checkpoints and ganforge snapshots, each built here by a small generator, each refused with one line and
exit 2, fast, in little memory, and without writing anything (no snapshot, no image, no folder)."""

import collections
import io
import json
import os
import pickle
import resource
import signal
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch
from hostile_harness import Case, assert_all_rejected

from launch_helpers import tiny_archive

sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))  # the official-pickle fixtures live there
import tf_fixtures as tfx  # noqa: E402
from interop_fixtures import (  # noqa: E402
    Persistent,
    _reconstruct_persistent_obj,
    generator_kwargs,
    network_pickle,
    official_names,
    persistent_tree,
    random_weights,
)
from rosinality_reference import generator_state  # noqa: E402

from ganforge.nets import Discriminator, Generator  # noqa: E402
from ganforge.snapshot import content_sha256, save_snapshot  # noqa: E402

ARCH = dict(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)
DEPTH = 100_000  # nesting that overflows any recursive reader
SHARED = 60  # levels of a structure whose every level refers twice to the one below: 2^60 paths, 60 objects


class Call:
    """Pickles as `function(*args)`, then BUILD with `state` (when given) and SETITEMS with `items`."""

    def __init__(self, function, *args, state=None, items=None):
        self.function, self.args, self.state, self.items = function, args, state, items

    def __reduce__(self):
        return self.function, self.args, self.state, None, None if self.items is None else iter(self.items)


class NestedStorage:
    """Pickles as torch pickles a storage inside an NVlabs file: `torch.storage._load_from_bytes(data)`."""

    def __init__(self, numel: int):
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage is deprecated, but it is what NVlabs files hold
            torch.save(torch.zeros(numel).storage(), buffer, _use_new_zipfile_serialization=False)
        self.data = buffer.getvalue()

    def __reduce__(self):
        return torch.storage._load_from_bytes, (self.data,)


def tensor(storage, size=(1,), stride=(1,), **extra):
    return Call(torch._utils._rebuild_tensor_v2, storage, 0, size, stride, False, collections.OrderedDict(), **extra)


def shared_list(levels: int = SHARED):
    value = [0]
    for _ in range(levels):
        value = [value, value]
    return value


def keyed(key):
    """Pickles as {key: 1}, without hashing `key` here (a dict literal would)."""
    return Call(collections.OrderedDict, items=[(key, 1)])


def shared_tuple(levels: int = SHARED):
    value = ()
    for _ in range(levels):
        value = (value, value)
    return value


# --- NVlabs pickles ---------------------------------------------------------------------------------------------------


def tiny_tree(**kwargs_changes) -> tuple[Generator, Persistent]:
    G = random_weights(Generator(**ARCH), seed=1)
    kwargs = generator_kwargs(G)
    for name, value in kwargs_changes.items():
        group, _, key = name.rpartition("__")
        (kwargs[group] if group else kwargs)[key] = value
    return G, persistent_tree(G, kwargs)


def official(**kwargs_changes) -> bytes:
    """A tiny NVlabs pickle whose G_ema recorded `kwargs_changes` (group__name for a nested setting)."""
    return network_pickle({"G_ema": tiny_tree(**kwargs_changes)[1]})


def conv_parameters(tree: Persistent) -> dict:
    """The parameter dict of the 8x8 block's conv1 in a persistent tree (weight [4, 4, 3, 3])."""
    return tree.state["_modules"]["synthesis"].state["_modules"]["b8"].state["_modules"]["conv1"].state["_parameters"]


def pkl_widening_build() -> bytes:
    """A 1-element storage widened by BUILD (Tensor.__setstate__ -> set_) to the shape of a conv weight: without the
    guard, `import` wrote uninitialised process memory into a snapshot with a valid checksum."""
    _, tree = tiny_tree()
    storage = NestedStorage(1)
    source = tensor(storage)
    conv_parameters(tree)["weight"] = tensor(storage, state=(source, 0, (4, 4, 3, 3), (36, 9, 3, 1)))
    return network_pickle({"G_ema": tree})


def pkl_build_on_record() -> bytes:
    _, tree = tiny_tree()
    meta = dict(type="class", version=6, module_src="", class_name="Generator", state=tree.state)
    evil = Call(_reconstruct_persistent_obj, meta, state={"class_name": 7, "state": "overwritten"})
    return network_pickle({"G_ema": evil})


def pkl_setitems_on_tensor() -> bytes:
    _, tree = tiny_tree()
    conv_parameters(tree)["weight"] = tensor(NestedStorage(144), (4, 4, 3, 3), (36, 9, 3, 1), items=[(0, 1.0)])
    return network_pickle({"G_ema": tree})


def pkl_repeated_elements() -> bytes:
    """A conv weight of 144 elements viewing one element 144 times (stride 0): memory beyond what the file holds."""
    _, tree = tiny_tree()
    conv_parameters(tree)["weight"] = tensor(NestedStorage(1), (4, 4, 3, 3), (0, 0, 0, 0))
    return network_pickle({"G_ema": tree})


def pkl_shared_modules() -> bytes:
    """A module tree 6 levels deep whose every level holds the same module 50 times: 50^6 paths to walk."""
    empty = {"_parameters": {}, "_buffers": {}, "_modules": {}}
    module = Persistent("Conv2dLayer", empty)
    for _ in range(6):
        module = Persistent("SynthesisBlock", {**empty, "_modules": {f"c{i}": module for i in range(50)}})
    G, tree = tiny_tree()
    tree.state["_modules"]["synthesis"].state["_modules"]["b8"] = module
    return network_pickle({"G_ema": tree})


def pkl_with_marker(marker: object, replacement: bytes, **kwargs_changes) -> bytes:
    """A protocol-3 pickle (no frames) with the BINUNICODE of the string `marker` replaced by raw opcodes."""
    _, tree = tiny_tree(**kwargs_changes)
    data = network_pickle({"G_ema": tree}, protocol=3)
    encoded = marker.encode()
    opcode = b"X" + struct.pack("<I", len(encoded)) + encoded
    assert data.count(opcode) == 1
    return data.replace(opcode, replacement)


def pkl_deep_kwargs() -> bytes:
    deep = b"]" * DEPTH + b"a" * (DEPTH - 1)  # EMPTY_LIST x N, then APPEND each into the one below
    return pkl_with_marker("DEEP-VALUE", deep, synthesis_kwargs__conv_clamp="DEEP-VALUE")


def pkl_huge_int_kwarg() -> bytes:
    digits = 8000  # LONG4 of 8000 bytes: an integer of 64,000 bits, which repr() refuses to print
    return pkl_with_marker("HUGE", b"\x8b" + struct.pack("<i", digits) + b"\x7f" * digits,
                           synthesis_kwargs__channel_base="HUGE")  # fmt: skip


def declared_length(opcode: bytes, width: str = "<Q") -> bytes:
    """A 20-byte pickle whose first opcode declares 2^62 bytes."""
    return (b"\x80\x04" + opcode + struct.pack(width, 2**62) + b"\x00" * 20)[:20]


def pkl_memo_index() -> bytes:
    return b"\x80\x02K\x01r\xff\xff\xff\xff."  # LONG_BINPUT at index 2^32 - 1: the C unpickler grows its memo to it


# --- TensorFlow-era pickles ------------------------------------------------------------------------------------------


def tf_networks(**kwargs_changes) -> tuple:
    """(G, D, Gs) of a tiny TensorFlow-era file, Gs recording `kwargs_changes` in its static kwargs."""
    G = random_weights(Generator(**ARCH), seed=1)
    Gs = tfx.tf_generator(G, kwargs=tfx.generator_kwargs(G, "ada") | kwargs_changes)
    return Gs, tfx.tf_discriminator(random_weights(Discriminator(**ARCH), seed=2)), Gs


def tf_file(**kwargs_changes) -> bytes:
    return tfx.tf_pickle(*tf_networks(**kwargs_changes))


def tf_with_variables(*extra) -> bytes:
    """A tiny TF file whose Gs holds the variables `extra` ((name, value) pairs) besides its own."""
    networks = tf_networks()
    networks[2].__getstate__()["variables"].extend(extra)
    return tfx.tf_pickle(*networks)


def tf_array(shape, dtype, data: bytes) -> Call:
    return Call(tfx._reconstruct, np.ndarray, (0,), b"b", state=(1, shape, np.dtype(dtype), False, data))


def tf_shared_bytes() -> bytes:
    """One 4 KB bytes object (pickled once, then fetched from the memo) made into 2,000 arrays: 8 MB of arrays from a
    100 KB file (each a copy once converted), refused once they hold more bytes than the file."""
    data = b"\x00" * 4096
    return tf_with_variables(*((f"x{i}", tf_array((1024,), "f4", data)) for i in range(2000)))


def tf_shared_array() -> bytes:
    shared = tfx.Array(np.zeros(4))
    return tf_with_variables(("a", shared), ("b", shared))


def tf_deep_kwargs() -> bytes:
    """fmap_max nested DEEP lists deep (written as opcodes; a protocol-3 file, without frames)."""
    data = tfx.tf_pickle(*tf_networks(fmap_max="DEEP-VALUE"), protocol=3)
    marker = b"X" + struct.pack("<I", 10) + b"DEEP-VALUE"
    assert data.count(marker) == 1
    return data.replace(marker, b"]" * DEPTH + b"a" * (DEPTH - 1))


def tf_truncated() -> bytes:
    data = tf_file()
    return data[: len(data) // 2]


TF_NETWORK = b"\x80\x02cdnnlib.tflib.network\nNetwork\n)\x81"  # GLOBAL, EMPTY_TUPLE, NEWOBJ


# --- rosinality checkpoints -------------------------------------------------------------------------------------------


def rosinality_state() -> dict:
    return generator_state(8, 4, 2, {4: 4, 8: 4}, seed=1)


def torch_saved(obj, zip_format: bool = True) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=zip_format)
    return buffer.getvalue()


def pt_valid() -> bytes:
    return torch_saved({"g_ema": rosinality_state()})


def pt_truncated() -> bytes:
    data = pt_valid()
    return data[: len(data) // 2]


def pt_bad_crc() -> bytes:
    """A byte of the first member (data.pkl) flipped: torch reads no CRC, so the edited pickle would be loaded."""
    data = bytearray(pt_valid())
    first = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0]
    start = first.header_offset + 30 + len(first.filename.encode()) + len(first.extra)
    data[start + first.file_size // 2] ^= 0x20
    return bytes(data)


def pt_legacy_declared_length() -> bytes:
    """torch.save's format before PyTorch 1.6, a string declaring 2^32 - 1 bytes (torch's reader allocates it)."""
    data = torch_saved({"g_ema": rosinality_state()}, zip_format=False)
    return data.replace(b"X\x05\x00\x00\x00g_ema", b"X\xff\xff\xff\xffg_ema")


def pt_deflated_member() -> bytes:
    """data.pkl of 64 MB deflated into a few KB (torch.save stores members uncompressed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(pt_valid())) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            payload = source.read(info)
            if info.filename.endswith("data.pkl"):
                payload = payload[:-1] + b"\x00" * (64 << 20) + b"."
            archive.writestr(info.filename, payload, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def pt_many_mapping_layers() -> bytes:
    state = rosinality_state()
    one = torch.zeros(4, 4)
    state |= {f"style.{i}.weight": one for i in range(3, 300)}  # n_mlp is counted from the names
    return torch_saved({"g_ema": state})


def pt_wide_view() -> bytes:
    """input.input [1, 4096, 4, 4] viewing one element (stride 0): 4,096 channels from a 4-byte storage."""
    state = rosinality_state()
    state["input.input"] = torch.zeros(1).expand(1, 4096, 4, 4)
    return torch_saved({"g_ema": state})


def pt_deep_args() -> bytes:
    """`args` nested DEPTH deep (written as opcodes: pickling it would overflow the pickler's own recursion)."""
    out = io.BytesIO()
    saved = io.BytesIO(torch_saved({"g_ema": rosinality_state(), "args": "DEEP-ARGS"}))
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            payload = source.read(info)
            if info.filename.endswith("data.pkl"):
                marker = b"X" + struct.pack("<I", 9) + b"DEEP-ARGS"
                payload = payload.replace(marker, b"]" * DEPTH + b"a" * (DEPTH - 1))
            archive.writestr(info.filename, payload)
    return out.getvalue()


# --- snapshots --------------------------------------------------------------------------------------------------------


def snapshot_parts() -> tuple[dict, dict]:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-snapshot-{os.getpid()}.safetensors"
    save_snapshot(path, random_weights(Generator(**ARCH), seed=2), {"kimg": 1.0})
    with safetensors.safe_open(path, framework="pt") as f:
        parts = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    path.unlink()
    return parts


def snapshot(change=None, sign: str = "again", drop: tuple = (), tensors_change=None) -> bytes:
    """A tiny valid snapshot, its metadata changed by `change` (a dict merged in) and `drop`, its tensors by
    `tensors_change`; its checksum computed `again`, left as it was (`stale`), or removed (`none`)."""
    metadata, tensors = snapshot_parts()
    metadata = {k: v for k, v in (metadata | (change or {})).items() if k not in drop}
    if tensors_change is not None:
        tensors = tensors_change(tensors)
    if sign == "again":
        metadata["content_sha256"] = content_sha256(metadata, tensors)
    elif sign == "none":
        metadata.pop("content_sha256", None)
    return safetensors.torch.save(tensors, metadata=metadata)


def config(**changes) -> dict:
    return {"generator": json.dumps({**Generator(**ARCH).config, **changes})}


def nan_weights(tensors: dict) -> dict:
    return {k: torch.full_like(v, float("nan")) if k.endswith("weight") else v for k, v in tensors.items()}


# --- the table --------------------------------------------------------------------------------------------------------

IMPORTS = {  # file name -> bytes; each is read by `ganforge import NAME out.safetensors`
    "widening-build.pkl": pkl_widening_build,
    "build-on-record.pkl": pkl_build_on_record,
    "setitems-on-tensor.pkl": pkl_setitems_on_tensor,
    "repeated-elements.pkl": pkl_repeated_elements,
    "shared-modules.pkl": pkl_shared_modules,
    "shared-structure-in-message.pkl": lambda: network_pickle(
        {"G_ema": tiny_tree(synthesis_kwargs__channel_base=shared_list())[1]}
    ),  # fmt: skip
    "shared-tuple-key.pkl": lambda: network_pickle({"G_ema": tiny_tree(synthesis_kwargs__x=keyed(shared_tuple()))[1]}),
    "mapping-layers-1e7.pkl": lambda: network_pickle({"G_ema": tiny_tree(mapping_kwargs__num_layers=10**7)[1]}),
    "channels-4096.pkl": lambda: network_pickle(
        {"G_ema": tiny_tree(synthesis_kwargs__channel_max=4096, synthesis_kwargs__channel_base=2**20)[1]}
    ),  # fmt: skip
    "params-beyond-file.pkl": lambda: network_pickle(
        {
            "G_ema": tiny_tree(
                img_resolution=1024, synthesis_kwargs__channel_max=1024, synthesis_kwargs__channel_base=2**20
            )[1]
        }
    ),  # fmt: skip
    "deep-kwargs.pkl": pkl_deep_kwargs,
    "huge-int-kwarg.pkl": pkl_huge_int_kwarg,
    "binbytes8-2e62.pkl": lambda: declared_length(b"\x8e"),
    "binunicode8-2e62.pkl": lambda: declared_length(b"\x8d"),
    "frame-2e62.pkl": lambda: declared_length(b"\x95"),
    "bytearray8-2e62.pkl": lambda: b"\x80\x05" + declared_length(b"\x96")[2:],
    "memo-index.pkl": pkl_memo_index,
    "tf-payload-in-kwargs.pkl": lambda: tf_file(fmap_max=Call(os.system, "true")),
    "tf-build-twice.pkl": lambda: TF_NETWORK + b"}b}b.",
    "tf-build-on-a-list.pkl": lambda: TF_NETWORK + b"0]]b.",
    "tf-declared-length.pkl": lambda: TF_NETWORK + b"\x8e" + struct.pack("<Q", 2**62) + b"\x00" * 8,
    "tf-shared-bytes.pkl": tf_shared_bytes,
    "tf-shared-array.pkl": tf_shared_array,
    "tf-object-array.pkl": lambda: tf_with_variables(("x", tf_array((2,), "O", [None, None]))),
    "tf-huge-shape.pkl": lambda: tf_with_variables(("x", tf_array((2**62, 2**62), "f4", b"\x00" * 16))),
    "tf-deep-kwargs.pkl": tf_deep_kwargs,
    "tf-channels-4096.pkl": lambda: tf_file(fmap_max=4096),
    "tf-params-beyond-file.pkl": lambda: tf_file(resolution=1024, fmap_max=1024, fmap_base=2**19),
    "tf-truncated.pkl": tf_truncated,
    "truncated.pt": pt_truncated,
    "bad-crc.pt": pt_bad_crc,
    "deflated-member.pt": pt_deflated_member,
    "legacy-declared-length.pt": pt_legacy_declared_length,
    "mapping-layers-300.pt": pt_many_mapping_layers,
    "wide-view.pt": pt_wide_view,
}
GENERATES = {  # file name -> bytes; each is read by `ganforge generate --network NAME --seeds 0`
    "no-checksum-nan.safetensors": lambda: snapshot(drop=("tensors_sha256",), sign="none", tensors_change=nan_weights),
    "signed-nan.safetensors": lambda: snapshot(tensors_change=nan_weights),
    "altered-metadata.safetensors": lambda: snapshot(config(mapping_layers=2), sign="stale"),
    "mapping-layers-1e7.safetensors": lambda: snapshot(config(mapping_layers=10**7)),
    "channels-4096.safetensors": lambda: snapshot(config(channel_max=4096, channel_base=2**20)),
    "params-beyond-file.safetensors": lambda: snapshot(config(resolution=1024, channel_max=1024, channel_base=2**20)),
    "unknown-argument.safetensors": lambda: snapshot(config(**{"x" * 10_000: 1})),
    "config-not-object.safetensors": lambda: snapshot({"generator": "[1, 2]"}),
    "deep-config.safetensors": lambda: snapshot({"generator": "[" * DEPTH + "]" * DEPTH}),
    "deep-meta.safetensors": lambda: snapshot({"meta": "[" * 900 + "]" * 900}),
    "huge-format-version.safetensors": lambda: snapshot({"format_version": "9" * 100_000}),
    "widening-build.pkl": pkl_widening_build,
    "deep-kwargs.pkl": pkl_deep_kwargs,
    "tf-shared-bytes.pkl": tf_shared_bytes,
    "tf-deep-kwargs.pkl": tf_deep_kwargs,
}


def test_hostile_network_files_are_refused_by_every_reader(tmp_path):
    cases = []
    for name, make in IMPORTS.items():
        (tmp_path / name).write_bytes(make())
        cases.append(Case(f"import {name}", ("import", name, f"out-{name}.safetensors"),
                          absent=(f"out-{name}.safetensors",)))  # fmt: skip
    for name, make in GENERATES.items():
        (tmp_path / f"g-{name}").write_bytes(make())
        args = ("generate", "--network", f"g-{name}", "--seeds", "0", "--outdir", f"images-{name}", "--device", "cpu")
        cases.append(Case(f"generate {name}", args, absent=(f"images-{name}",)))
    (tmp_path / "data").mkdir()
    data = tiny_archive(tmp_path / "data")
    for name in ("signed-nan.safetensors", "altered-metadata.safetensors", "mapping-layers-1e7.safetensors"):
        args = ("train", "--data", str(data), "--outdir", f"runs-{name}", "--cfg", "tiny", "--device", "cpu",
                "--resume", f"g-{name}")  # fmt: skip
        cases.append(Case(f"train --resume {name}", args, absent=(f"runs-{name}",)))
    cases += destination_cases(tmp_path)
    if Path("/proc/self/mem").exists():  # Linux: a regular file whose every read fails (EIO)
        cases.append(Case("import an unreadable file", ("import", "/proc/self/mem", "mem.safetensors")))
    (tmp_path / "deep-args.pt").write_bytes(pt_deep_args())  # harmless: read without recursion, then unused
    cases.append(Case("import deep-args.pt", ("import", "deep-args.pt", "deep.safetensors"), exit_code=0))
    outcomes = {o.name: o for o in assert_all_rejected(cases, tmp_path)}
    assert max(o.peak_rss_mb for o in outcomes.values()) < 2048, [(o.name, o.peak_rss_mb) for o in outcomes.values()]
    assert "sets the state of a tensor (BUILD)" in outcomes["import widening-build.pkl"].stderr
    assert "without a checksum" in outcomes["generate no-checksum-nan.safetensors"].stderr
    assert "does not match its checksum" in outcomes["generate altered-metadata.safetensors"].stderr
    assert "bytes in all from a file of" in outcomes["import tf-shared-bytes.pkl"].stderr
    assert "refused: the pickle asks for posix.system" in outcomes["import tf-payload-in-kwargs.pkl"].stderr
    made = {p.name for p in tmp_path.iterdir()} - {*IMPORTS, *(f"g-{n}" for n in GENERATES)}
    assert made == {"data", "a-fifo.safetensors", "a-file", "a-folder.safetensors", "good.pkl", "deep-args.pt",
                    "deep.safetensors", "hostile-cases.json", "hostile-outcomes.jsonl"}  # fmt: skip


def destination_cases(tmp_path: Path) -> list[Case]:
    """`import` of a good file to destinations that cannot be written: each refused before the file is read."""
    (tmp_path / "good.pkl").write_bytes(official())
    (tmp_path / "a-file").write_bytes(b"")
    (tmp_path / "a-folder.safetensors").mkdir()
    os.mkfifo(tmp_path / "a-fifo.safetensors")
    return [
        # root ignores permission bits, so a folder cannot be made read-only here; a parent that is a regular file
        # fails the same open() with the same kind of OSError
        Case("parent is a file", ("import", "good.pkl", "a-file/out.safetensors")),
        Case("parent is a file, deeper", ("import", "good.pkl", "a-file/x/y/out.safetensors")),
        Case("destination is a folder", ("import", "good.pkl", "a-folder.safetensors")),
        Case("destination is a fifo", ("import", "good.pkl", "a-fifo.safetensors")),
    ]


def _small_files() -> None:
    """A full disk, as far as this process can tell: writes past 64 KB fail with EFBIG (SIGXFSZ ignored, so the
    write returns the error instead of killing the process)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


def test_import_onto_a_full_disk_exits_2_and_leaves_nothing(tmp_path):
    G = random_weights(Generator(**{**ARCH, "channel_max": 64, "channel_base": 512}), seed=3)  # > 64 KB of weights
    (tmp_path / "good.pkl").write_bytes(network_pickle({"G_ema": persistent_tree(G, generator_kwargs(G))}))
    command = [sys.executable, "-m", "ganforge", "import", "good.pkl", "new/folder/out.safetensors"]
    proc = subprocess.run(command, cwd=tmp_path, preexec_fn=_small_files, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: new/folder/out.safetensors: cannot write (File too large)")
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.pkl"]  # no partial file, no folder made for it


@pytest.mark.parametrize("zip_format", [True, False])
def test_a_valid_rosinality_checkpoint_still_imports(tmp_path, zip_format):
    """The zip and view checks refuse none of what torch.save writes."""
    (tmp_path / "g.pt").write_bytes(torch_saved({"g_ema": rosinality_state(), "latent_avg": torch.zeros(4)},
                                                zip_format))  # fmt: skip
    from ganforge.interop import import_network

    assert import_network(tmp_path / "g.pt", tmp_path / "g.safetensors")["source_format"] == "rosinality checkpoint"


def test_the_pickle_stand_ins_write_official_names():
    with official_names():
        assert b"torch_utils.persistence" in pickle.dumps(Persistent("X", {}))
