"""`ganforge project` through the command line: a short run writes every file (the video included) and says what it
did; every bad input is one `error:` line, exit 2, nothing written."""

import json

import pytest
from click.testing import CliRunner
from PIL import Image
from project_helpers import known_targets, saved_generator

from ganforge.cli import main


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("project_cli")
    network, G = saved_generator(folder)
    targets, _ = known_targets(G, folder, count=1)
    return folder, network, targets[0]


def _project(network, target, outdir, *extra):
    args = ["project", "--network", str(network), "--target", str(target), "--outdir", str(outdir), "--device", "cpu"]
    return CliRunner().invoke(main, [*args, "--steps", "3", "--perceptual", "none", *map(str, extra)])


def test_a_short_run_writes_every_file_and_says_what_it_did(made, tmp_path):
    folder, network, target = made
    result = _project(network, target, tmp_path / "out", "--video", "--tune-g", "2")
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in (tmp_path / "out" / "target0").iterdir())
    video = [name for name in files if name.startswith("proj.") and not name.endswith(".png")]
    assert len(video) == 1 and _frame_size(tmp_path / "out" / "target0" / video[0]) == (512, 256)  # 256 px each
    expected = {"G_tuned.safetensors", "compare.png", "proj.png", "proj_tuned.png", "projected_w.npz",
                "projection.json", "target.png"}  # fmt: skip
    assert expected <= set(files)
    last = result.output.splitlines()[-1]
    assert last.startswith(f"projected 1 target(s) into {tmp_path / 'out'} (")
    record = json.loads((tmp_path / "out" / "target0" / "projection.json").read_text())
    before, after = record["final"], record["tuning"]["final"]  # the result is the tuned one, the other beside it
    assert f"PSNR {after['psnr_db']} dB, SSIM {after['ssim']} with G tuned (PSNR {before['psnr_db']} dB" in last
    assert "project: target 1 of 1" in result.output and "1-1 of 1" not in result.output


def _frame_size(path) -> tuple[int, int]:
    """(width, height) of a video's frames: an mp4 as ffmpeg reads it, else as Pillow does."""
    if path.suffix == ".mp4":
        import imageio_ffmpeg

        return tuple(next(imageio_ffmpeg.read_frames(str(path)))["size"])
    with Image.open(path) as image:
        return image.size


def test_the_video_is_as_large_as_asked_each_pixel_a_block(made, tmp_path):
    folder, network, target = made
    result = _project(network, target, tmp_path / "out", "--video", "--video-size", "48", "--steps", "2")
    assert result.exit_code == 0, result.output
    (video,) = [
        p for p in (tmp_path / "out" / "target0").iterdir() if p.name.startswith("proj.") and p.suffix != ".png"
    ]
    assert _frame_size(video) == (96, 48)


def test_bad_inputs_are_one_line_and_nothing_is_written(made, tmp_path):
    folder, network, target = made
    not_image = tmp_path / "notes.png"
    not_image.write_text("not an image")
    cases = {
        "not an image": ((network, not_image), (), f"--target {not_image}: not an image PIL can identify"),
        "missing target": ((network, tmp_path / "gone.png"), (), "cannot be read"),
        "class, unconditional network": ((network, target), ("--class", 1), "--class: the network is unconditional"),
        "repeated names": ((network, target), ("--target", target), "several images are named target0"),
        "no vgg16 file": ((network, target), ("--perceptual", tmp_path / "vgg16.pt"), "--perceptual"),
        "missing network": ((tmp_path / "G.pkl", target), (), "G.pkl"),
        "steps out of range": ((network, target), ("--steps", 0), "--steps"),
    }
    for name, ((net, image), extra, message) in cases.items():
        outdir = tmp_path / name.replace(" ", "-")
        result = _project(net, image, outdir, *extra)
        lines = result.output.splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, result.output)
        assert message in lines[0], (name, lines[0])
        assert not outdir.exists(), name
