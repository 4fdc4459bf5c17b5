"""Hostile projected_w.npz files against `generate --projected-w`, in the harness's 3 GB address space: files of a
few hundred bytes whose zip directory or .npy header declares gigabytes must be refused from what they declare,
before numpy allocates the array (tests/generate/test_generate_projected.py holds the table of every other kind)."""

import io
import struct
import zipfile

import numpy as np
import torch
from hostile_harness import Case, assert_all_rejected

from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

NUM_WS, W_DIM = 6, 8  # a 16 px generator with w_dim 8
ROW_BYTES = NUM_WS * W_DIM * 4
DECLARED_ROWS = 20_000_000  # 3.6 GiB of float32 rows: more than the harness lets a process allocate, under 4 GiB


def _npz(rows: int, in_directory: bool) -> bytes:
    """A stored zip holding w.npy whose header declares `rows` rows of float32 and whose data is one row; with
    `in_directory`, the zip's directory entry declares the member's full size too (stored: packed and unpacked
    alike), so that the header and the directory agree."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<f4", "fortran_order": False, "shape": (rows, NUM_WS, W_DIM)}
    )
    declared = len(member.getvalue()) + rows * ROW_BYTES
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("w.npy", member.getvalue() + bytes(ROW_BYTES))
    raw = bytearray(archive.getvalue())
    if in_directory:
        entry = raw.index(b"PK\x01\x02")
        raw[entry + 20 : entry + 28] = struct.pack("<II", declared, declared)
    return bytes(raw)


def test_files_declaring_gigabytes_are_refused_before_allocation(tmp_path):
    torch.manual_seed(0)
    network = tmp_path / "G.safetensors"
    save_snapshot(network, Generator(resolution=16, z_dim=8, w_dim=W_DIM, channel_base=64, channel_max=8,
                                     mapping_layers=2), {})  # fmt: skip
    files = {
        "member larger than the file": _npz(DECLARED_ROWS, in_directory=True),
        "header declaring 3.6 GiB": _npz(DECLARED_ROWS, in_directory=False),
    }
    cases = []
    for name, data in files.items():
        path = tmp_path / f"{name.replace(' ', '-')}.npz"
        path.write_bytes(data)
        args = ("generate", "--network", str(network), "--outdir", str(tmp_path / "out"), "--device", "cpu",
                "--projected-w", str(path))  # fmt: skip
        cases.append(Case(name, args, absent=("out",), seconds=30.0))
    outcomes = assert_all_rejected(cases, tmp_path)
    for outcome in outcomes:
        assert "projected_w.npz" in outcome.stderr and outcome.peak_rss_mb < 2048, outcome
