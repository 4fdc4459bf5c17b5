"""`ganforge generate --label` and `--label-file`: a label vector reaches G(z, c) as typed (a one-hot one gives the
bytes of --class), a label file makes every seed with every vector under names that tell them apart, and every bad
vector, file or combination exits 2 with its problems listed, before anything is written."""

import tracemalloc

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from generate_helpers import read_png, tiny_snapshot

from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.generate.labels import MAX_LABEL_FILE_BYTES, MAX_LISTED_LINES
from ganforge.generate.latents import z_from_seeds
from ganforge.snapshot import load_snapshot


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("snapshots")
    return {
        "c3": tiny_snapshot(folder / "c3.safetensors", c_dim=3),
        "unconditional": tiny_snapshot(folder / "unconditional.safetensors"),
    }


def run(network, outdir, *args):
    return CliRunner().invoke(main, ["generate", "--network", network, "--outdir", outdir, "--device", "cpu",
                                     *map(str, args)])  # fmt: skip


def refused(result) -> list[str]:
    """The error lines of a run that must have exited 2 without a traceback."""
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert isinstance(result.exception, SystemExit)
    return result.output.splitlines()


def written(outdir) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(outdir.iterdir())}


MODES = {
    "images": ("--seeds", "0-1"),
    "grid": ("--seeds", "0-3", "--grid", "2x2"),
    "interp": ("--seeds", "0-1", "--interp", "2", "--interp-format", "gif"),
    "style-mix": ("--style-mix", "0-1", "2", "--mix-cells"),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_one_hot_label_gives_the_bytes_of_its_class_in_every_mode(snapshots, tmp_path, mode):
    for name, flags in (("class", ("--class", "1")), ("label", ("--label", "0, 1,0"))):
        result = run(snapshots["c3"], tmp_path / name, *MODES[mode], *flags)
        assert result.exit_code == 0, result.output
    assert written(tmp_path / "label") == written(tmp_path / "class") and written(tmp_path / "class")
    run(snapshots["c3"], tmp_path / "other", *MODES[mode], "--class", "2")
    assert written(tmp_path / "other") != written(tmp_path / "class")  # the class does change these files


def by_hand(snapshot, seeds, vector) -> np.ndarray:
    """G(z, c) of the seeds' latents (as generate draws them) in one batch, each with `vector`: uint8 [N, H, W, C]."""
    G, _ = load_snapshot(snapshot)
    c = torch.tensor([vector] * len(seeds), dtype=torch.float32)
    with torch.no_grad():
        images = G(z_from_seeds(seeds, G.z_dim), c, noise_mode="const")
    return to_uint8(images).permute(0, 2, 3, 1).numpy()


def test_a_continuous_label_reaches_the_network(snapshots, tmp_path):
    seeds = (3, 4)
    for name, text in (("a", "0.2,1,0"), ("b", "-0.5, 0.25, 3e-1")):
        assert run(snapshots["c3"], tmp_path / name, "--seeds", "3,4", "--label", text).exit_code == 0
    made = {name: np.stack([read_png(tmp_path / name / f"seed{s:07d}.png") for s in seeds]) for name in "ab"}
    assert np.array_equal(made["a"], by_hand(snapshots["c3"], seeds, [0.2, 1.0, 0.0]))
    assert np.array_equal(made["b"], by_hand(snapshots["c3"], seeds, [-0.5, 0.25, 0.3]))
    assert not np.array_equal(made["a"], made["b"])


def test_a_label_file_makes_every_seed_with_every_vector(snapshots, tmp_path):
    (tmp_path / "labels.csv").write_text("smile, glasses, age\n0.2, 1, 0\n\n-1,0.5,2\r\n")
    result = run(snapshots["c3"], tmp_path / "file", "--seeds", "5,6", "--label-file", tmp_path / "labels.csv",
                 "--batch", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    names = [f"seed000000{s}-label000{v}.png" for s in (5, 6) for v in (0, 1)]
    assert result.output.startswith(f"wrote 4 images ({names[0]} ... {names[-1]})")
    files = written(tmp_path / "file")
    assert sorted(files) == names and len(set(files.values())) == 4
    for v, vector in enumerate(("0.2,1,0", "-1,0.5,2")):  # --batch 1: each image alone, whatever else is made
        assert run(snapshots["c3"], tmp_path / f"label{v}", "--seeds", "5,6", "--label", vector, "--batch", "1")
        for s in (5, 6):
            assert (
                files[f"seed000000{s}-label000{v}.png"] == (tmp_path / f"label{v}" / f"seed000000{s}.png").read_bytes()
            )


def test_bad_vectors_are_refused_before_anything_is_written(snapshots, tmp_path):
    c3, out = snapshots["c3"], tmp_path / "out"
    assert refused(run(c3, out, "--seeds", "1", "--label", "1,0")) == [
        f"error: --label 1,0: 2 number(s), {c3} takes label vectors of 3"
    ]
    assert refused(run(c3, out, "--seeds", "1", "--label", "nan,0,1")) == [
        "error: --label nan,0,1: 'nan' is not a finite number; write the vector as numbers separated by commas, "
        "e.g. --label 0.2,1,0"
    ]
    assert refused(run(c3, out, "--seeds", "1", "--label", "0, inf ,1e39"))[0].startswith(
        "error: --label 0, inf ,1e39: 'inf' is not a finite number, '1e39' is beyond float32 (+-3.4e38); "
    )
    assert refused(run(c3, out, "--seeds", "1", "--label", "0,one,")) == [
        "error: --label 0,one,: 'one' is not a number, '' is not a number; write the vector as numbers separated by "
        "commas, e.g. --label 0.2,1,0"
    ]
    assert not out.exists()


def test_bad_label_files_list_every_bad_line(snapshots, tmp_path):
    c3, out = snapshots["c3"], tmp_path / "out"
    lines = ["a,b,c", "1,0,0", "1,0", "nan,1,0", "0,x,inf,5", "0,1,0", " ", "1,2,3"]
    (tmp_path / "bad.csv").write_bytes("\n".join(lines).encode() + b"\n\xff\xfe,1,0\n")
    where = f"error: --label-file {tmp_path / 'bad.csv'}"
    assert refused(run(c3, out, "--seeds", "1", "--label-file", tmp_path / "bad.csv")) == [
        f"{where}: line 3: 2 value(s), the network takes label vectors of 3",
        f"{where}: line 4: 'nan' is not a finite number",
        f"{where}: line 5: 'x' is not a number, 'inf' is not a finite number; 4 value(s), the network takes label "
        "vectors of 3",
        f"{where}: line 9: not UTF-8 text; save the file as UTF-8",
    ]
    # a first line with a typo among numbers is a bad vector, not a header
    (tmp_path / "many.csv").write_text("x,0,0\n" * (MAX_LISTED_LINES + 5))
    found = refused(run(c3, out, "--seeds", "1", "--label-file", tmp_path / "many.csv"))
    assert len(found) == MAX_LISTED_LINES + 1 and found[0].endswith(": line 1: 'x' is not a number")
    assert found[-1] == f"error: --label-file {tmp_path / 'many.csv'}: 5 more bad line(s)"
    for name, text in (("empty.csv", ""), ("header.csv", "a,b,c\n\n \n")):
        (tmp_path / name).write_text(text)
        assert refused(run(c3, out, "--seeds", "1", "--label-file", tmp_path / name)) == [
            f"error: --label-file {tmp_path / name}: no label vectors; write one vector of 3 comma-separated numbers "
            "per line"
        ]
    assert not out.exists()


def test_a_file_over_the_cap_is_refused_by_its_size_unread(snapshots, tmp_path):
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as file:
        file.truncate(MAX_LABEL_FILE_BYTES + 1)  # sparse: no disk taken
    tracemalloc.start()
    try:
        result = run(snapshots["c3"], tmp_path / "out", "--seeds", "1", "--label-file", huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused(result) == [
        f"error: --label-file {huge}: {MAX_LABEL_FILE_BYTES + 1} bytes, more than the {MAX_LABEL_FILE_BYTES} such a "
        "file may take; give a text file of at most 64.0 MiB, one label vector per line"
    ]
    assert peak < 16 * 2**20  # reading it would have held 64 MiB


def test_the_images_of_a_label_file_count_against_the_limit(snapshots, tmp_path):
    (tmp_path / "labels.csv").write_text("1,0,0\n0,1,0\n0,0,1\n")
    result = run(snapshots["c3"], tmp_path / "out", "--seeds", "0-499999", "--label-file", tmp_path / "labels.csv")
    assert refused(result) == [
        "error: --seeds with --label-file (3 vectors): 1,500,000 images, more than 1,000,000; split the work into "
        "several runs"
    ]


def test_flags_that_do_not_go_together_or_with_the_network(snapshots, tmp_path):
    c3, out, labels = snapshots["c3"], tmp_path / "out", tmp_path / "labels.csv"
    labels.write_text("1,0,0\n")
    one_of = "give one of --class (a class), --label (one label vector) or --label-file (a file of them)"
    assert refused(run(c3, out, "--seeds", "1", "--class", "0", "--label", "1,0,0")) == [
        f"error: --class and --label: {one_of}"
    ]
    assert refused(run(c3, out, "--seeds", "1", "--class", "0", "--label", "1,0,0", "--label-file", labels)) == [
        f"error: --class, --label and --label-file: {one_of}"
    ]
    assert refused(run(c3, out, "--seeds", "0-1", "--grid", "1x2", "--label-file", labels)) == [
        "error: --label-file with --grid: a label file makes a PNG per vector and seed; give --grid one vector with "
        "--label"
    ]
    assert refused(run(c3, out, "--seeds", "1")) == [
        f"error: --class: {c3} is conditional; pick a class from 0 to 2, or give a label vector of 3 numbers with "
        "--label or --label-file"
    ]
    unconditional = snapshots["unconditional"]
    for flags in (("--label", "1,0,0"), ("--label-file", labels), ("--class", "0")):
        assert refused(run(unconditional, out, "--seeds", "1", *flags)) == [
            f"error: {flags[0]} {flags[1]}: {unconditional} is unconditional; drop {flags[0]}"
        ]
    assert not out.exists()
