"""`--g-attn`/`--d-attn`: self-attention (SAGAN) at chosen resolutions of StyleGAN2's G and D. Resolved into the
networks (or refused: where a network has no such choice, no block, or no memory for the map that R1 and the
path-length penalty differentiate twice, naming the figure), taken from pretrained files, trained through both
penalties, and continued bitwise after a stop (two ranks against one: test_train_two_ranks.py)."""

import json

import pytest
from click.testing import CliRunner
from train_helpers import (
    continued_equals_straight,
    make_dataset,
    tiny_args,
    weights_found,
)

from ganforge import checkpoint
from ganforge.cli import main
from ganforge.config.describe import describe_derived
from ganforge.errors import UserError
from ganforge.nets.configured import make_networks
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve

MIB = 2**20


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("attention") / "squares")


def _resolve(preset: str = "tiny", found=None, host_bytes=None, **given):
    options = TrainOptions(data="/data/d.zip", outdir="/nonexistent/runs", preset=preset, **given)
    dataset = DatasetFacts(resolution=32, channels=3, label_dim=0, name="d")
    return resolve(options, Facts(dataset, 1, "cpu", found=found, host_bytes=host_bytes))


def _problems(preset: str = "tiny", **given) -> list[str]:
    with pytest.raises(UserError) as caught:
        _resolve(preset, **given)
    return caught.value.problems


def test_attention_resolutions_reach_the_networks_and_the_start_of_run_lines():
    cfg = _resolve(g_attn="16, 32", d_attn="32")
    assert (cfg.model.g_attn, cfg.model.d_attn) == ((16, 32), (32,))
    G, D = make_networks(cfg)
    assert (G.config["attention"], D.config["attention"]) == ([16, 32], [32])
    assert "layouts: G skip, D resnet; G attends at 16,32; D attends at 32" in describe_derived(cfg)
    cfg = _resolve("tiny3", d_attn="16")
    assert make_networks(cfg)[1].config["attention"] == [16] and cfg.model.g_attn == ()


def test_attention_where_there_is_no_block_or_no_choice_is_refused_with_the_fix():
    blocks = "attention is at the resolutions of the network's blocks, each once: 8, 16, 32 for 32x32 images"
    assert _problems(g_attn="4,16", d_attn="16,16") == [f"--g-attn 4,16: {blocks}", f"--d-attn 16,16: {blocks}"]
    assert _problems(g_attn="16x") == ["--g-attn 16x: not a comma-separated list of resolutions; write e.g. --g-attn "
                                       "16,32"]  # fmt: skip
    assert _problems("tiny3", g_attn="16") == [
        "--g-attn 16: the stylegan3-t generator has no such choice; drop --g-attn or pass a StyleGAN2 --cfg"
    ]
    assert _problems("tiny-r3gan", d_attn="16") == [
        "--d-attn 16: R3GAN's discriminator has no such choice; drop --d-attn or pass a StyleGAN2 or StyleGAN3 --cfg"
    ]


def test_a_map_that_the_penalties_cannot_hold_is_refused_naming_its_size():
    """tiny: 16 images per micro-batch; R1's map at 32x32 is 1024^2 positions x 16 images x 4 bytes, held 4 times
    (256 MiB); the path-length penalty's at 16x16 is 256^2 x 8 images x 4 bytes x 4 (8 MiB)."""
    assert _resolve(d_attn="32", host_bytes=300 * MIB).model.d_attn == (32,)
    (problem,) = _problems(g_attn="16", d_attn="32", host_bytes=200 * MIB)
    assert problem == (
        "--d-attn 32: R1 differentiates the attention at 32x32 twice, holding its map (1024 positions squared for 16 "
        "images, float32) and the map's gradients, which needs 256 MiB (264 MiB in all); 200 MiB of memory is "
        "available; attend at a lower resolution than 32, or pass a smaller --batch-gpu"
    )
    assert _resolve(d_attn="32", batch_gpu=8, host_bytes=200 * MIB).model.d_attn == (32,)


def test_pretrained_networks_decide_where_they_attend():
    found = weights_found("/w/net.safetensors", _resolve(g_attn="16", d_attn="32"))
    assert (_resolve(found=found).model.g_attn, _resolve(found=found).model.d_attn) == ((16,), (32,))
    assert _problems(found=found, g_attn="32") == [
        "--g-attn 32: /w/net.safetensors has 16, and its networks decide their attention; drop --g-attn"
    ]


def test_attention_trains_through_both_penalties_and_a_stopped_run_continues_bitwise(data, tmp_path):
    def train(outdir, kimg: float):
        args = tiny_args(data, outdir, kimg=kimg, batch=8, g_attn=8, d_attn=8)
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output

    state = checkpoint.load(continued_equals_straight(train, tmp_path, 0.016))
    assert state["G"]["synthesis.b8.attn.gain"] != 0 and state["D"]["b8.attn.gain"] != 0  # learned, through R1/PL
    (run,) = (tmp_path / "stopped").iterdir()
    records = [json.loads(line) for line in (run / "stats.jsonl").read_text().splitlines()]
    assert {"Loss/D/r1", "Loss/G/pl"} <= set(records[0])
