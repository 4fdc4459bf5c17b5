"""What `ganforge generate` refuses before it makes anything: numbers out of range, typed values too long to repeat,
counts beyond MAX_COUNT, and requests that do not fit in memory (with the figure); and that streaming frames and
cells in batches gives the same latents as making them all at once."""

import math
import os
import tracemalloc
from pathlib import Path

import numpy as np
import PIL.Image
import pytest
import torch
from generate_helpers import ARCH, options, tiny_snapshot

from ganforge import memory
from ganforge.durable import WriteError
from ganforge.errors import UserError
from ganforge.generate import GenerateOptions, budget, generate
from ganforge.generate.latents import LoopPath, loop_path, mix_styles
from ganforge.generate.needs import needs_of
from ganforge.generate.render import Renderer
from ganforge.generate.typed import MAX_COUNT
from ganforge.nets import Generator

PATHS = dict(network=Path("net.pkl"), outdir=Path("out"))


def problems(**fields) -> list[str]:
    with pytest.raises(UserError) as err:
        GenerateOptions.parse(**PATHS, **fields)
    return err.value.problems


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors")


@pytest.mark.parametrize("psi", [math.nan, math.inf, -math.inf, 2.5, -3.0])
def test_trunc_must_be_a_finite_psi_in_range(psi):
    assert problems(seeds="1", trunc=psi) == [
        f"--trunc {psi:g}: must be a truncation psi from -2 to 2 (1: none, 0: the average image)"
    ]


def test_every_number_is_checked_where_it_is_parsed():
    assert GenerateOptions.parse(**PATHS, seeds="1", trunc=-2.0, rotate=360.0, translate="-100,100").trunc == -2.0
    assert problems(seeds="1", rotate=math.nan) == ["--rotate nan: must be a number of degrees from -360 to 360"]
    assert problems(seeds="1", rotate=1e300)[0].startswith("--rotate 1e+300: must be a number of degrees from -360")
    for text in ("nan,0", "0,inf", "1e3,0", "1,2,3"):
        assert problems(seeds="1", translate=text) == [
            f"--translate {text}: write X,Y in image widths, each from -100 to 100, e.g. 0.25,-0.1"
        ]
    huge = 10**4000  # click's INT lets any size of integer through
    found = problems(seeds="1", batch=huge, trunc_cutoff=huge, class_index=MAX_COUNT + 1)
    assert found == ["--batch 100000000000... (4001 digits): must be from 1 to 1,000,000",
                     "--trunc-cutoff 100000000000... (4001 digits): must be from 1 to 1,000,000",
                     "--class 1000001: must be from 0 to 1,000,000"]  # fmt: skip
    assert problems(seeds="1,2", interp=huge) == ["--interp 100000000000... (4001 digits): must be from 1 to 1,000,000"]


def test_options_made_in_python_meet_the_checks_of_the_command_line(snapshot, tmp_path):
    """The declarations' checks hold for GenerateOptions made without `parse` too: every value refused at once, nothing
    written."""
    made = options(snapshot, tmp_path / "out", seeds=(0,), trunc=math.nan, batch=0, noise_mode="bogus", size=1.5)
    with pytest.raises(UserError) as err:
        generate(made)
    assert err.value.problems == [
        "--batch 0: must be from 1 to 1,000,000",
        "--trunc nan: must be a truncation psi from -2 to 2 (1: none, 0: the average image)",
        "--noise-mode bogus: unknown; use one of const, random, none",
        "--size 1.5: not a whole number",
    ]
    assert not (tmp_path / "out").exists()


def test_typed_values_are_repeated_short_and_each_problem_once():
    found = problems(seeds="9" * 5000)
    assert len(found) == 1 and found[0].endswith("is above 4294967295") and len(found[0]) < 200
    found = problems(seeds=",".join(["x"] * 100_000))  # one line, however often the same mistake is made
    assert found == [f"--seeds {'x,' * 28}x...: 'x' is not N or N-M (e.g. 0-7,12,100-199)"]
    found = problems(seeds=",".join(f"a{i}" for i in range(50)))
    assert len(found) == 11 and found[-1] == "--seeds: 40 more bad part(s)"
    assert GenerateOptions.parse(**PATHS, seeds="0" * 5000 + "7").seeds == (7,)  # leading zeros are still a number
    assert problems(seeds="1", grid="1" + "0" * 5000 + "x2") == [
        f"--grid 1{'0' * 56}...: more than 1,000,000 images; split the work into several grids"
    ]
    assert problems(seeds="1", grid="0x0000") == ["--grid 0x0000: write ROWSxCOLUMNS with both at least 1, e.g. 4x8"]


def test_a_value_of_many_bad_parts_keeps_only_the_problems_it_shows():
    """100,000 different bad parts (a 0.7 MB value): the eleven lines, not a line kept for each (22 MiB then)."""
    text = ",".join(f"a{i}" for i in range(100_000))
    tracemalloc.start()
    try:
        found = problems(seeds=text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found) == 11 and found[-1] == "--seeds: 99,990 more bad part(s)"
    assert peak < 12 * 2**20  # the parts themselves, split: ~6 MiB


def test_counts_beyond_max_count_are_refused():
    assert problems(seeds="0-3", interp=MAX_COUNT // 2) == [
        "--interp 500000 with 4 seeds: 2,000,000 images, more than 1,000,000; split the work into several runs"
    ]
    assert problems(style_mix=("0-999", "0-999")) == [
        "--style-mix 1,000 rows x 1,000 columns: 1,002,000 images, more than 1,000,000; split the work into several "
        "runs"
    ]
    assert "more than 1,000,000 values" in problems(seeds=f"0-{MAX_COUNT}")[0]


@pytest.mark.parametrize("spherical", [True, False])
def test_a_loop_made_in_pieces_is_the_loop_made_at_once(spherical):
    keys = torch.randn(3, 14, 512)  # [keys, num_ws, w_dim] of a 256 px StyleGAN2: long enough for vectorized loops
    whole = loop_path(keys, 7, spherical)
    path = LoopPath(keys, 7, spherical)
    for size in (1, 3, 5, 7, 21):
        pieces = torch.cat([path.between(i, min(i + size, 21)) for i in range(0, 21, size)])
        assert torch.equal(pieces, whole), size


def test_mixing_some_cells_gives_those_cells_of_the_table():
    rows, cols = torch.randn(3, 5, 2), torch.randn(4, 5, 2)
    table = mix_styles(rows, cols, [1, 2])
    assert torch.equal(mix_styles(rows, cols, [1, 2], cells=range(5, 11)), table[5:11])


def test_the_grid_of_the_issue_needs_183_gib():
    o = GenerateOptions.parse(**PATHS, seeds="0-999999", grid="1000x1000")
    needs, disk = needs_of(o, (256, 256), 3, 10**6, False, None)
    with pytest.raises(UserError) as err:
        memory.check(needs, host=32 * memory.GIB, device=None)
    assert err.value.problems == ["--grid 1000x1000 at 256 px: a 256000x256000 image needs 183 GiB; 32.0 GiB of memory "
                                  "is available; make a smaller grid, or several"]  # fmt: skip
    assert disk == 256000**2 * 3
    memory.check(needs, host=200 * memory.GIB, device=None)  # fits: no error
    memory.check(needs, host=None, device=None)  # unknown: not checked


def test_on_a_gpu_the_batch_is_checked_against_gpu_memory():
    o = GenerateOptions.parse(**PATHS, seeds="0-99", batch=64)
    needs, _ = needs_of(o, (1024, 1024), 3, 700 * 2**20, True, None)
    with pytest.raises(UserError) as err:
        memory.check(needs, host=64 * memory.GIB, device=24 * memory.GIB)
    assert err.value.problems == [
        "--batch 64: 64 images of 1024 px synthesized at once needs 43.8 GiB; 24.0 GiB of GPU memory is available; "
        "use a smaller --batch"
    ]


def test_the_measured_peak_of_one_image_predicts_a_batch():
    G = Generator(**ARCH).eval()
    one = budget.synthesis_peak_bytes(G, Renderer(G, "const", 1, 1).synthesize_ws)
    four = budget.synthesis_peak_bytes(G, lambda ws: Renderer(G, "const", 4, 4).synthesize_ws(ws.repeat(4, 1, 1)))
    image = ARCH["resolution"] ** 2 * 3 * 4  # the float32 output alone
    assert image < one and 3 * one <= four <= 4 * one + image, (one, four)


def test_a_bigger_size_means_bigger_images_frames_and_files():
    o = GenerateOptions.parse(**PATHS, seeds="0-7", grid="2x2", interp=4, size=512)
    needs, disk = needs_of(o, (32, 32), 3, 10**6, False, "webp")
    frame = 1024 * 1024 * 3
    assert needs[-1].what == "--interp 4: 8 frames of 1024x1024 in one webp file (held at once)"
    assert needs[-1].nbytes == budget.FRAME_COPIES * 8 * frame and disk == 8 * frame
    assert needs[1].what == "--batch 16: 16 images of 32 px shown at 512 px"  # 4 frames of 4 cells at once
    assert needs[1].nbytes == 16 * (32 * 32 * 3 * 5 + 2 * 512 * 512 * 3)
    assert needs_of(o, (32, 32), 3, 10**6, False, "mp4")[1] == 0  # mp4 streams its frames
    table = GenerateOptions.parse(**PATHS, style_mix=("0-1", "2-4"), mix_cells=True, size=100)
    needs, disk = needs_of(table, (32, 32), 1, 10**6, False, None)
    assert needs[-1].what == "--style-mix of 2 x 3 seeds at 100 px: a 400x300 table"
    assert needs[-1].nbytes == 12 * 100 * 100 and disk == (12 + 6) * 100 * 100
    for seeds, grid in (("0-3", "2x2"), ("0-15", "4x4")):
        o = GenerateOptions.parse(**PATHS, seeds=seeds, grid=grid, size=64)
        assert needs_of(o, (32, 32), 3, 1, False, None)[1] == len(range(16 if grid == "4x4" else 4)) * 64 * 64 * 3


def test_what_does_not_fit_is_refused_before_anything_is_written(snapshot, tmp_path):
    seeds = tuple(range(400**2))
    with pytest.raises(UserError, match=r"--grid 400x400 at 8192 px: a 3276800x3276800 image needs 29.3 TiB"):
        generate(options(snapshot, tmp_path / "out", seeds=seeds, grid=(400, 400), size=8192))
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError, match=r"--grid 2x2 with --interp: each of the 4 cells loops through its own seeds"):
        generate(options(snapshot, tmp_path / "out", seeds=(0, 1, 2, 3), grid=(2, 2), interp=2))
    assert not (tmp_path / "out").exists()


def test_a_special_file_among_the_outputs_stops_generate_before_the_first_image(snapshot, tmp_path):
    tmp_path.joinpath("out").mkdir()
    os.mkfifo(tmp_path / "out" / "seed0000002.png")
    with pytest.raises(WriteError, match=r"out/seed0000002.png: is a FIFO \(named pipe\), not a regular file"):
        generate(options(snapshot, tmp_path / "out", seeds=(0, 1, 2)))
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["seed0000002.png"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="--outdir .*file/out: .*file is a file, so no folder can be made there"):
        generate(options(snapshot, tmp_path / "file" / "out", seeds=(0,)))


def test_files_larger_than_the_free_disk_are_warned_about(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr("ganforge.outputs.free_bytes", lambda folder: 1000)
    with pytest.warns(
        UserWarning,
        match=r"--outdir .*: the images may need up to 3.0 KiB \(their uncompressed size\), 1.0 KiB is free",
    ):
        generate(options(snapshot, tmp_path, seeds=(0, 1, 2, 3)))


def test_generate_checks_what_it_asks_against_the_memory_available_now(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "available_host_bytes", lambda: 1000)
    with pytest.raises(UserError, match=r"needs .*; 1.0 KiB of memory is available"):
        generate(options(snapshot, tmp_path / "out", seeds=(0, 1, 2, 3), grid=(2, 2)))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("space", ["z", "w"])
def test_an_interpolation_made_in_batches_has_the_frames_made_one_at_a_time(snapshot, tmp_path, space):
    made = []
    for batch in (1, 4, 6):
        generate(options(snapshot, tmp_path / str(batch), seeds=(0, 1, 2), interp=2, interp_space=space,
                         interp_format="webp", batch=batch))  # fmt: skip
        with PIL.Image.open(tmp_path / str(batch) / "interp.webp") as video:
            made.append(np.stack([np.asarray(video.seek(i) or video.convert("RGB")) for i in range(6)]).astype(int))
    assert np.abs(made[1] - made[0]).max() <= 1 and np.abs(made[2] - made[0]).max() <= 1  # rounding only
