"""Option parsing of `ganforge generate`: seed ranges, grid, output modes, and the checks against the network."""

import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from ganforge.errors import UserError
from ganforge.generate import GenerateOptions
from ganforge.generate.typed import MAX_COUNT, MAX_SEED, parse_ranges

PATHS = dict(network=Path("net.pkl"), outdir=Path("out"))


def parse(**fields) -> GenerateOptions:
    return GenerateOptions.parse(**PATHS, **fields)


def problems(**fields) -> list[str]:
    with pytest.raises(UserError) as err:
        parse(**fields)
    return err.value.problems


def test_seed_ranges_and_lists_keep_the_order_given():
    assert parse(seeds="0-3,12, 7 ,100-101").seeds == (0, 1, 2, 3, 12, 7, 100, 101)
    assert parse(seeds=str(MAX_SEED)).seeds == (MAX_SEED,)


def test_every_bad_seed_part_is_reported():
    found = []
    parse_ranges("--seeds", f"5-2,x,-1,1.5,{MAX_SEED + 1},,3", found)
    assert found == [
        "--seeds 5-2,x,-1,1.5,4294967296,,3: range 5-2 runs backwards; write 2-5",
        "--seeds 5-2,x,-1,1.5,4294967296,,3: 'x' is not N or N-M (e.g. 0-7,12,100-199)",
        "--seeds 5-2,x,-1,1.5,4294967296,,3: '-1' is not N or N-M (e.g. 0-7,12,100-199)",
        "--seeds 5-2,x,-1,1.5,4294967296,,3: '1.5' is not N or N-M (e.g. 0-7,12,100-199)",
        f"--seeds 5-2,x,-1,1.5,4294967296,,3: 4294967296 is above {MAX_SEED}",
        "--seeds 5-2,x,-1,1.5,4294967296,,3: '' is not N or N-M (e.g. 0-7,12,100-199)",
    ]
    assert "more than 1,000,000 values" in problems(seeds=f"0-{MAX_COUNT}")[0]


def test_grid_and_mode_combinations():
    assert parse(seeds="0-7", grid="2x4").grid == (2, 4) and parse(seeds="0-7", grid="2x4").mode == "grid"
    assert parse(seeds="0-5").mode == "images" and parse(seeds="0,1", interp=3).mode == "interp"
    assert parse(style_mix=("1-2", "3")).style_mix == ((1, 2), (3,))
    assert problems(seeds="0", grid="4") == ["--grid 4: write ROWSxCOLUMNS with both at least 1, e.g. 4x8"]
    assert problems(seeds="0", interp=5) == ["--interp: needs at least two --seeds to travel between"]
    assert problems() == [
        "--seeds: which images to make, e.g. --seeds 0-7,42 (or --style-mix ROWS COLS, or --projected-w FILE)"
    ]
    assert problems(seeds="1", grid="1x1", interp=2, style_mix=("1", "2"), mix_layers="0") == [
        "--grid and --interp and --style-mix: choose one output mode (--grid with --interp is a grid of loops)",
        "--seeds: --style-mix takes its own row and column seeds; drop --seeds",
    ]
    assert problems(grid="1x2", style_mix=("1", "2"))[0].startswith("--grid and --style-mix: choose one output mode")
    assert problems(seeds="1", mix_layers="0-2", mix_cells=True, resize="nearest", fps=24.0) == [
        "--mix-layers: only used with --style-mix",
        "--mix-cells: only used with --style-mix",
        "--fps: only used with --interp",
        "--resize: only used with --size",
    ]
    loops = parse(seeds="0-7", grid="2x2", interp=3)
    assert loops.mode == "interp" and loops.layout == (2, 2) and loops.frames == 6 and loops.image_count == 24


def test_a_grid_has_one_seed_per_cell_and_a_grid_of_loops_the_same_number_per_cell():
    assert problems(seeds="0-7", grid="4x8") == [
        "--grid 4x8: 32 cells, --seeds gives 8 images; give 32 seeds, or a grid of 8 cells (e.g. --grid 2x4)"
    ]
    assert problems(seeds="0-9", grid="2x4") == [
        "--grid 2x4: 8 cells, --seeds gives 10 images; give 8 seeds, or a grid of 10 cells (e.g. --grid 2x5)"
    ]
    assert problems(seeds="0-6", grid="3x3")[0].endswith("a grid of 7 cells (e.g. --grid 1x7)")
    assert problems(seeds="0-35", grid="5x5")[0].endswith("a grid of 36 cells (e.g. --grid 6x6)")
    assert parse(seeds="0-5", grid="2x3").grid == (2, 3)
    for seeds, count in (("0-3", 4), ("0-8", 9), ("0-10", 11)):  # one per cell; not a multiple of the cells
        assert problems(seeds=seeds, grid="2x2", interp=3) == [
            "--grid 2x2 with --interp: each of the 4 cells loops through its own seeds (the same number in each, at "
            f"least 2); --seeds gives {count}; give a multiple of 4 from 8, e.g. --seeds 0-7"
        ]
    assert parse(seeds="0-11", grid="2x2", interp=3).frames == 9


@pytest.mark.parametrize("fps", [math.nan, math.inf, -math.inf, 0.0, -1.0, 0.05, 121.0, 1e300])
def test_fps_must_be_finite_positive_and_bounded(fps):
    assert problems(seeds="1,2", interp=2, fps=fps) == [
        f"--fps {fps:g}: must be a number of frames per second from 0.1 to 120"
    ]


def test_size_and_resize():
    assert parse(seeds="1", size=8192, resize="nearest").size == 8192 and parse(seeds="1").resize == "lanczos"
    assert parse(seeds="1,2", interp=2).fps == 30 and parse(seeds="1,2", interp=2, fps=None).fps == 30
    assert problems(seeds="1", size=0) == ["--size 0: must be from 1 to 8,192"]
    assert problems(seeds="1", size=8193) == ["--size 8193: must be from 1 to 8,192"]
    assert problems(seeds="1", size=10**4000) == ["--size 100000000000... (4001 digits): must be from 1 to 8,192"]


def test_network_checks_list_every_problem():
    conditional = SimpleNamespace(c_dim=3, num_ws=6, has_w_space=True)
    unconditional = SimpleNamespace(c_dim=0, num_ws=6, has_w_space=True)
    r3gan = SimpleNamespace(c_dim=0, num_ws=1, has_w_space=False)
    parse(seeds="1", class_index=2, trunc_cutoff=6).check_network(conditional)
    with pytest.raises(UserError) as err:
        parse(style_mix=("1", "2"), trunc_cutoff=7, mix_layers="4-6").check_network(conditional)
    assert err.value.problems == [
        "--class: net.pkl is conditional; pick a class from 0 to 2, or give a label vector of 3 numbers with --label "
        "or --label-file",
        "--trunc-cutoff 7: net.pkl has 6 ws; use 1 to 6",
        "--mix-layers: net.pkl has layers 0 to 5, not 6",
    ]
    with pytest.raises(UserError) as err:  # a million layers too deep: the message names three and counts the rest
        parse(style_mix=("1", "2"), mix_layers="0-999999").check_network(unconditional)
    assert err.value.problems == ["--mix-layers: net.pkl has layers 0 to 5, not 6, 7, 8 and 999,991 more"]
    with pytest.raises(UserError, match="--class 3: net.pkl has classes 0 to 2"):
        parse(seeds="1", class_index=3).check_network(conditional)
    with pytest.raises(UserError, match="--class 0: net.pkl is unconditional; drop --class"):
        parse(seeds="1", class_index=0).check_network(unconditional)
    with pytest.raises(UserError) as err:
        parse(style_mix=("1", "2"), trunc=0.7).check_network(r3gan)
    no_w = "net.pkl is an R3GAN generator, which has no mapping network and so no W space"
    assert err.value.problems[:2] == [
        f"--trunc 0.7: {no_w} and no average w to truncate towards; leave --trunc out",
        f"--style-mix: {no_w} and no per-layer styles to mix; use --seeds or --interp",
    ]
    parse(seeds="1-3").check_network(r3gan)
    assert parse(style_mix=("1", "2")).layers_to_mix(4) == (0, 1, 2, 3)
    assert parse(style_mix=("1", "2")).layers_to_mix(14) == (0, 1, 2, 3, 4, 5, 6)
    assert parse(style_mix=("1", "2"), mix_layers="8-9").layers_to_mix(14) == (8, 9)
