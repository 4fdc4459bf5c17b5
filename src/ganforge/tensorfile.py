"""safetensors files whose bytes depend only on what they hold, so that repeating a run repeats its files exactly.

safetensors keeps a file's string metadata in a hash map whose order changes from process to process, so the same
tensors and metadata come out with the header's keys in a different order each time. The format is an 8-byte
little-endian header length, the JSON header, then the tensor bytes at offsets counted from the end of the header;
writing the header again with sorted keys therefore changes no offset and no tensor byte.
"""

import json
import struct

import safetensors.torch
import torch

_ALIGNMENT = 8  # safetensors pads the header with spaces so that the tensor bytes start 8-byte aligned


def tensor_file_bytes(tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of `tensors` (contiguous CPU tensors) and `metadata`, with a canonical header."""
    data = safetensors.torch.save(tensors, metadata=metadata)
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % _ALIGNMENT)
    return struct.pack("<Q", len(text)) + text + data[8 + length :]
