"""File kinds are told apart by their first bytes, whatever their names."""

import io
import pickle

import pytest
import torch

from ganforge.errors import UserError
from ganforge.interop import load_network
from ganforge.interop.network import NVLABS, ROSINALITY, SNAPSHOT, TENSORFLOW, file_kind
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot


def test_snapshot_whose_header_length_starts_like_a_pickle(tmp_path):
    G = Generator(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)
    path = tmp_path / "G.pkl"
    for pad in range(0, 2048, 8):  # safetensors pads its header to 8 bytes: find a length whose low byte is 0x80
        save_snapshot(path, G, {"pad": "x" * pad})
        if path.read_bytes()[0] == 0x80:
            break
    assert path.read_bytes()[0] == 0x80
    assert file_kind(path) == SNAPSHOT and load_network(path)[0].config == G.config


def test_kinds_by_content(tmp_path):
    path = tmp_path / "file.bin"
    for data, kind in (
        (pickle.dumps({"G": 1}, protocol=2), NVLABS),
        (pickle.dumps({"G": 1}, protocol=4), NVLABS),
        (b"\x80\x02cdnnlib.tflib.network\nNetwork\n)\x81.", TENSORFLOW),  # GLOBAL
        (
            b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x14dnnlib.tflib.network\x94\x8c\x07Network\x93.",
            TENSORFLOW,
        ),
        (b"\x80\x04\x8c\x14dnnlib.tflib.network\x8c\x07Network\x93.", TENSORFLOW),  # STACK_GLOBAL
        (b"\x80\x04\x8c\x05numpy\x8c\x05dtype\x93.", NVLABS),  # another first global: the PyTorch reader's to refuse
        (_torch_save(True), ROSINALITY),
        (_torch_save(False), ROSINALITY),
    ):
        path.write_bytes(data)
        assert file_kind(path) == kind
    for data, what in ((b"", "an empty file"), (b"\x89PNG\r\n\x1a\n....", "a PNG image"),
                       (pickle.dumps(1, protocol=0), "of unknown content")):  # fmt: skip
        path.write_bytes(data)
        with pytest.raises(UserError, match=f"{what} .first bytes"):
            file_kind(path)


def _torch_save(zip_format: bool) -> bytes:
    buffer = io.BytesIO()
    torch.save({"g_ema": {}}, buffer, _use_new_zipfile_serialization=zip_format)
    return buffer.getvalue()
