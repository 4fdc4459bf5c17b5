"""safetensors files with a canonical header: the same content gives the same bytes, and safetensors reads them."""

import safetensors
import safetensors.torch
import torch

from ganforge.tensorfile import tensor_file_bytes


def test_same_content_same_bytes_however_safetensors_orders_its_metadata():
    tensors = {
        "b": torch.arange(5.0, dtype=torch.float64),
        "a": torch.ones(2, 3),
        "c": torch.tensor(7, dtype=torch.uint8),
    }
    metadata = {key: key * 3 for key in "vwxyz"}
    raw = {safetensors.torch.save(tensors, metadata=metadata) for _ in range(8)}
    assert len(raw) > 1, "safetensors orders its metadata the same way each time: the test would prove nothing"
    assert len({tensor_file_bytes(tensors, metadata) for _ in range(8)}) == 1


def test_the_canonical_file_reads_back_exactly(tmp_path):
    tensors = {"w": torch.randn(4, 3), "n": torch.arange(7, dtype=torch.int64), "s": torch.tensor(2.5)}
    data = tensor_file_bytes(tensors, {"format": "x", "note": "é"})
    assert int.from_bytes(data[:8], "little") % 8 == 0
    (tmp_path / "f.safetensors").write_bytes(data)
    with safetensors.safe_open(tmp_path / "f.safetensors", framework="pt") as f:
        assert f.metadata() == {"format": "x", "note": "é"}
        loaded = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    assert loaded.keys() == tensors.keys()
    for key, value in tensors.items():
        assert torch.equal(loaded[key], value) and loaded[key].dtype == value.dtype
