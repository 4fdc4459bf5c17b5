"""`ganforge generate --projected-w`: projected_w.npz as written (the official layout), its rows rendered exactly as
G.synthesis renders them, several files in order, interpolations and grids of rows, StyleGAN3's input transform, the
flags it excludes, and hostile files, each one `error:` line and exit 2."""

import io
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner
from generate_helpers import read_png, tiny_snapshot

from ganforge import projected
from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.errors import UserError
from ganforge.generate import GenerateOptions
from ganforge.generate.modes import projected_name
from ganforge.nets import StyleGAN3Generator, input_transform
from ganforge.projected import read_projected_w, write_projected_w
from ganforge.snapshot import load_snapshot, save_snapshot

NUM_WS, W_DIM = 6, 8  # the tiny StyleGAN2 of generate_helpers: 16 px, w_dim 8


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors")


def ws_rows(count: int, seed: int = 0, num_ws: int = NUM_WS) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, num_ws, W_DIM)).astype(np.float32)


def rendered(network: Path, ws: np.ndarray, noise_mode: str = "const", transform=None) -> np.ndarray:
    """What G.synthesis makes of `ws` in one call, as uint8 [N, H, W, C], rounded as generate rounds."""
    G, _ = load_snapshot(network)
    with torch.no_grad():
        extra = {} if transform is None else {"transform": transform}
        images = G.synthesis(torch.from_numpy(ws), noise_mode=noise_mode, **extra)
    return to_uint8(images).permute(0, 2, 3, 1).numpy()


def run(network: Path, outdir: Path, *args):
    return CliRunner().invoke(
        main, ["generate", "--network", str(network), "--outdir", str(outdir), "--device", "cpu", *map(str, args)]
    )


def test_the_file_holds_one_uncompressed_float32_array_w(tmp_path):
    w = ws_rows(2).astype(np.float64)  # converted to the official dtype
    write_projected_w(tmp_path / "projected_w.npz", w)
    with zipfile.ZipFile(tmp_path / "projected_w.npz") as archive:
        assert [(i.filename, i.compress_type) for i in archive.infolist()] == [("w.npy", zipfile.ZIP_STORED)]
    with np.load(tmp_path / "projected_w.npz", allow_pickle=False) as data:  # as gen_images.py reads it
        assert list(data.keys()) == ["w"] and data["w"].dtype == np.float32 and data["w"].shape == (2, NUM_WS, W_DIM)
        assert np.array_equal(data["w"], w.astype(np.float32))
    read = read_projected_w(tmp_path / "projected_w.npz", NUM_WS, W_DIM)
    assert read.dtype == np.float32 and np.array_equal(read, w.astype(np.float32))
    half = io.BytesIO()
    np.savez(half, w=w.astype(np.float16))  # float16 and float64 rows are read as float32
    (tmp_path / "half.npz").write_bytes(half.getvalue())
    assert np.array_equal(read_projected_w(tmp_path / "half.npz"), w.astype(np.float16).astype(np.float32))


def test_names_grow_with_the_rows():
    assert [projected_name(k, 3) for k in range(3)] == ["proj00.png", "proj01.png", "proj02.png"]
    assert projected_name(99, 100) == "proj99.png" and projected_name(5, 101) == "proj005.png"
    assert projected_name(1000, 1001) == "proj1000.png"


def test_each_row_of_each_file_renders_as_synthesis_renders_it(snapshot, tmp_path):
    w = ws_rows(3)
    write_projected_w(tmp_path / "a.npz", w[:1])
    write_projected_w(tmp_path / "b.npz", w[1:])
    result = run(snapshot, tmp_path / "out", "--projected-w", tmp_path / "a.npz", "--projected-w", tmp_path / "b.npz")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"wrote 3 images (proj00.png ... proj02.png) to {tmp_path / 'out'}: ")
    made = np.stack([read_png(tmp_path / "out" / f"proj{k:02d}.png") for k in range(3)])
    assert np.array_equal(made, rendered(snapshot, w))  # one batch of three, as generate made them
    result = run(snapshot, tmp_path / "one", "--projected-w", tmp_path / "b.npz", "--batch", "1", "--size", "32",
                 "--resize", "nearest", "--noise-mode", "none")  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = rendered(snapshot, w[2:], noise_mode="none").repeat(2, axis=1).repeat(2, axis=2)
    assert np.array_equal(read_png(tmp_path / "one" / "proj01.png"), expected[0])


def test_an_interpolation_between_two_projected_files_is_linear_in_w(snapshot, tmp_path):
    w = ws_rows(2, seed=1)
    write_projected_w(tmp_path / "a.npz", w[:1])
    write_projected_w(tmp_path / "b.npz", w[1:])
    files = ("--projected-w", tmp_path / "a.npz", "--projected-w", tmp_path / "b.npz")
    result = run(snapshot, tmp_path, *files, "--interp", "3", "--interp-format", "webp", "--interp-space", "w")
    assert result.exit_code == 0 and "wrote interp.webp" in result.output, result.output
    t = torch.arange(3, dtype=torch.float32)[:, None, None] / 3
    a, b = torch.from_numpy(w[:1]), torch.from_numpy(w[1:])
    path = torch.cat([a + t * (b - a), b + t * (a - b)]).numpy()  # a loop: back to the first row
    with PIL.Image.open(tmp_path / "interp.webp") as animation:
        frames = [np.asarray(animation.seek(i) or animation.convert("RGB")) for i in range(animation.n_frames)]
    assert np.array_equal(np.stack(frames), rendered(snapshot, path))
    write_projected_w(tmp_path / "four.npz", ws_rows(4, seed=2))
    result = run(snapshot, tmp_path, "--projected-w", tmp_path / "four.npz", "--grid", "2x2")
    assert result.exit_code == 0 and (tmp_path / "grid.png").is_file(), result.output
    grid, rows = read_png(tmp_path / "grid.png"), rendered(snapshot, ws_rows(4, seed=2))
    assert np.array_equal(grid[16:, :16], rows[2]) and np.array_equal(grid[:16, 16:], rows[1])


def test_stylegan3_rows_move_through_the_input_transform(tmp_path):
    torch.manual_seed(0)
    network = tmp_path / "g3.safetensors"
    save_snapshot(network, StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16,
                                              num_layers=4), {})  # fmt: skip
    w = ws_rows(2, num_ws=6)  # num_layers + 2
    write_projected_w(tmp_path / "w3.npz", w)
    result = run(network, tmp_path / "out", "--projected-w", tmp_path / "w3.npz", "--translate", "0.25,0")
    assert result.exit_code == 0, result.output
    made = np.stack([read_png(tmp_path / "out" / f"proj{k:02d}.png") for k in range(2)])
    assert np.array_equal(made, rendered(network, w, transform=input_transform((0.25, 0.0), math.radians(0.0))))


def test_flags_that_make_ws_from_seeds_are_refused_with_projected_rows(snapshot, tmp_path):
    write_projected_w(tmp_path / "one.npz", ws_rows(1))
    result = run(snapshot, tmp_path / "out", "--projected-w", tmp_path / "one.npz", "--seeds", "1", "--trunc", "0.7",
                 "--class", "0", "--interp-space", "z")  # fmt: skip
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert result.output.splitlines() == [
        "error: --projected-w with --seeds, --trunc, --class: its rows are ws, rendered as they are (their class or "
        "label is in them; seeds, truncation and style mixing make ws of their own); drop --seeds, --trunc, --class",
        "error: --interp-space z: the rows of --projected-w are ws, interpolated linearly in w; drop it",
    ]
    with pytest.raises(UserError, match=r"--projected-w with --style-mix, --trunc-cutoff: "):
        GenerateOptions.parse(network=snapshot, outdir=tmp_path, projected_w=[tmp_path], style_mix=("1", "2"),
                              trunc_cutoff=2)  # fmt: skip
    result = run(snapshot, tmp_path / "out", "--projected-w", tmp_path / "one.npz", "--interp", "4")
    assert result.output.splitlines() == [
        "error: --interp: needs at least two rows of --projected-w to travel between, the files hold 1; give another "
        "file too"
    ]
    result = run(snapshot, tmp_path / "out", "--projected-w", tmp_path / "one.npz", "--grid", "1x2")
    assert result.output.splitlines() == [
        "error: --grid 1x2: 2 cells, --projected-w holds 1 rows; a grid of 1 cells (e.g. --grid 1x1)"
    ]
    assert not (tmp_path / "out").exists()


def npz(members: dict[str, bytes], compression=zipfile.ZIP_STORED, comment: bytes = b"") -> bytes:
    """A zip of these members, as numpy.savez lays one out, or altered by the arguments."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.comment, info.compress_type = comment, compression
            archive.writestr(info, data)
    return buffer.getvalue()


def npy(array: np.ndarray, header: str | None = None, version=(1, 0)) -> bytes:
    """`array` as a .npy, its header dict replaced by `header` (the text numpy parses) when given."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    data = buffer.getvalue()
    if header is None and version == (1, 0):
        return data
    length = int.from_bytes(data[8:10], "little")
    text = (header or data[10 : 10 + length].decode()).encode()
    size = 4 if version == (2, 0) else 2
    return b"\x93NUMPY" + bytes(version) + len(text).to_bytes(size, "little") + text + data[10 + length :]


def hostile_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """name -> (a file, what its one error line says)."""
    w = ws_rows(1)
    good = npz({"w.npy": npy(w)})
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }"
    files = {
        "truncated": (good[: len(good) // 2], "its zip directory is damaged or has a comment (truncated?)"),
        "not a zip": (b"P3\n16 16\n", "not an .npz (a zip of .npy arrays)"),
        "a .npy": (npy(w), "a .npy array, not an .npz holding w; write it with numpy.savez(path, w=w)"),
        "pickle member": (npz({"w.npy": npy(np.array([{"x": 1}], dtype=object))}), "of dtype |O, not floating point"),
        "another key": (npz({"latents.npy": npy(w)}), "holds arrays named latents, not one named w"),
        "a second array": (npz({"w.npy": npy(w), "noise.npy": npy(w)}), "holds an array named noise, neither w nor"),
        "other network": (
            npz({"w.npy": npy(ws_rows(1, num_ws=14))}),
            f"holds ws of shape [1, 14, 8] (N x num_ws x w_dim), this network takes [N, {NUM_WS}, {W_DIM}]; project "
            "the image with this network",
        ),
        "2-D": (npz({"w.npy": npy(w[0])}), "its w has shape [6, 8], not [N, num_ws, w_dim] with N >= 1"),
        "no rows": (npz({"w.npy": npy(w[:0])}), "its w has shape [0, 6, 8], not [N, num_ws, w_dim] with N >= 1"),
        "integers": (npz({"w.npy": npy(w.astype(np.int32))}), "of dtype <i4, not floating point"),
        "NaN": (npz({"w.npy": npy(np.where(w > 1, np.nan, w))}), "of the 48 values of w are not finite float32"),
        "beyond float32": (npz({"w.npy": npy(w.astype(np.float64) * 1e300)}), "are not finite float32 numbers"),
        "huge declared shape": (
            npz({"w.npy": npy(w, header % f"{10**12}, 6, 8")}),
            "its w declares shape [1000000000000, 6, 8] of <f4, another size than the 192 bytes it holds",
        ),
        # nested operators: a malformed literal, and beyond the header bound, where Python's parser would run out of
        # stack (a MemoryError)
        "deep header": (npz({"w.npy": npy(w, header % ("-" * 900 + "1, 6, 8"))}), "its w.npy cannot be read"),
        "long header": (npz({"w.npy": npy(w, header % ("-" * 6000 + "1, 6, 8"))}), "its w.npy cannot be read"),
        "version 2.0": (npz({"w.npy": npy(w, version=(2, 0))}), "its w.npy is a .npy of version 2.0"),
        # numpy's parser of an old-style header lets tokenize's error out for an unclosed literal (found by fuzzing)
        "unclosed header": (
            npz({"w.npy": npy(w, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 6, 8")}),
            "its w.npy cannot be read",
        ),
        "compressed": (npz({"w.npy": npy(w)}, zipfile.ZIP_DEFLATED), "its w is compressed or encrypted"),
        "zip64 locator": (npz({"w.npy": npy(w)}, comment=b"PK\x06\x07" + bytes(16)), "its zip directory is not"),
        "1,000 members": (npz({f"{k}.npy": b"" for k in range(1000)}), "holds 1,000 arrays; a projected_w.npz holds w"),
        "noise of other rows": (
            npz({"w.npy": npy(w), "noise.synthesis.b4.conv1.noise_const.npy": npy(np.zeros((2, 4, 4), np.float32))}),
            "its noise.synthesis.b4.conv1.noise_const has shape [2, 4, 4], not 1 maps of at most",
        ),
        "noise not a map": (
            npz({"w.npy": npy(w), "noise.synthesis.b4.conv1.noise_const.npy": npy(np.zeros((1, 4, 4), np.int16))}),
            "is no noise map (float [N, H, W]",
        ),
        "too many noise maps": (
            npz({"w.npy": npy(w)} | {f"noise.m{k}.npy": npy(np.zeros((1, 4, 4), np.float32)) for k in range(18)}),
            "holds 19 arrays; a projected_w.npz holds w and at most 17 noise maps",
        ),
        "noise of another network": (
            npz({"w.npy": npy(w), "noise.synthesis.b4.conv9.noise_const.npy": npy(np.zeros((1, 4, 4), np.float32))}),
            "its noise maps are not this network's",
        ),
    }
    paths = {}
    for name, (data, message) in files.items():
        path = folder / f"{name.replace(' ', '-')}.npz"
        path.write_bytes(data)
        paths[name] = (path, message)
    (folder / "huge.npz").write_bytes(b"")
    os.truncate(folder / "huge.npz", projected.MAX_BYTES + 1)  # sparse: refused by its size, never read
    paths["over the size bound"] = (
        folder / "huge.npz",
        f"more than a projected_w.npz may hold ({projected.MAX_BYTES:,})",
    )
    os.mkfifo(folder / "fifo.npz")
    paths["a FIFO"] = (folder / "fifo.npz", "not a regular file")
    paths["missing"] = (folder / "missing.npz", "no such file; give a projected_w.npz as `ganforge project`")
    return paths


def test_hostile_files_are_one_error_line_and_exit_2(snapshot, tmp_path):
    failures = []
    for name, (path, message) in hostile_files(tmp_path).items():
        result = run(snapshot, tmp_path / "out", "--projected-w", path)
        lines = result.output.splitlines()
        if (
            result.exit_code != 2
            or len(lines) != 1
            or not lines[0].startswith(f"error: {path}: ")
            or message not in lines[0]
        ):
            failures.append(f"{name}: exit {result.exit_code}: {result.output[-600:]}")
    assert not failures, "\n".join(failures)
    assert not (tmp_path / "out").exists()


def test_stored_noise_maps_are_used_and_a_file_without_them_takes_the_networks(snapshot, tmp_path):
    from ganforge.nets.noise import noise_buffer_names, per_image_noise

    G, _ = load_snapshot(snapshot)
    w = ws_rows(2)
    rng = np.random.default_rng(1)
    maps = {name: rng.standard_normal((2, *G.synthesis.get_buffer(name).shape)).astype(np.float32)
            for name in noise_buffer_names(G)}  # fmt: skip
    with torch.no_grad():
        G.synthesis.get_submodule("b4.conv1").noise_strength.fill_(1.0)  # so that the maps show
    save_snapshot(tmp_path / "noisy.safetensors", G, {})
    write_projected_w(tmp_path / "with.npz", w, maps)
    write_projected_w(tmp_path / "without.npz", w)
    with_noise = run(tmp_path / "noisy.safetensors", tmp_path / "a", "--projected-w", tmp_path / "with.npz")
    assert with_noise.exit_code == 0, with_noise.output
    with torch.no_grad(), per_image_noise(G, {n: torch.from_numpy(v)[:, None] for n, v in maps.items()}):
        expected = to_uint8(G.synthesis(torch.from_numpy(w), noise_mode="const")).permute(0, 2, 3, 1).numpy()
    for row in range(2):
        assert np.array_equal(read_png(tmp_path / "a" / projected_name(row, 2)), expected[row])
    mixed = run(tmp_path / "noisy.safetensors", tmp_path / "b", "--projected-w", tmp_path / "with.npz",
                "--projected-w", tmp_path / "without.npz")  # fmt: skip
    assert mixed.exit_code == 0 and "every row is rendered with the network's own noise" in mixed.output
    own = rendered(tmp_path / "noisy.safetensors", np.concatenate([w, w]))
    assert np.array_equal(read_png(tmp_path / "b" / "proj00.png"), own[0])
