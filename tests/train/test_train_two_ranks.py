"""Two gloo ranks train each network family as one process does with the same global batch and micro-batch: one
step of 8 images, 2 ranks x 4 against 1 process x 2 micro-batches of 4, with both penalties. One pair of rank
processes trains the three families in turn (StyleGAN2 with self-attention, StyleGAN3-T, R3GAN), so the suite starts
two processes for them instead of six."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from train_helpers import final_checkpoint, make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.train import resolve, run

# Each family's options beside the dataset's image count (the self-attention run's dataset is the default 32).
FAMILIES = {
    "attention": (32, dict(batch=8, kimg=0.008, tick=0.008, g_attn="8", d_attn="8")),
    "tiny3": (8, dict(preset="tiny3", batch=8, kimg=0.008, tick=0.008, snap=1, aug="ada")),
    "tiny-r3gan": (8, dict(preset="tiny-r3gan", batch=8, kimg=0.008, tick=0.008, snap=1, aug="fixed")),
}
# Run as each rank: trains the TrainOptions given as JSON in each argument, one after the other.
RANKS_SCRIPT = """
import json, sys
from ganforge.train import TrainOptions, resolve, run
for options in sys.argv[1:]:
    assert run(resolve(TrainOptions(**json.loads(options)))) == 0
"""


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("two_ranks_data")
    return {count: make_dataset(root / f"squares{count}", count=count) for count in (8, 32)}


@pytest.fixture(scope="module")
def two_ranks(datasets, tmp_path_factory, run_ranks) -> dict[str, Path]:
    """Each family's OUTDIR of the two-rank runs."""
    root = tmp_path_factory.mktemp("two_ranks")
    outdirs = {family: root / family for family in FAMILIES}
    options = [tiny_options(datasets[count], outdirs[family], **common) for family, (count, common) in FAMILIES.items()]
    run_ranks(RANKS_SCRIPT, *(json.dumps(dataclasses.asdict(o)) for o in options), timeout=300)
    return outdirs


def _one_and_two(family: str, datasets, two_ranks, tmp_path) -> tuple[dict, dict]:
    """The final states of the family's one-process run (trained here) and of its two-rank run."""
    count, common = FAMILIES[family]
    assert run(resolve(tiny_options(datasets[count], tmp_path / "one", batch_gpu=4, **common))) == 0
    one = checkpoint.load(final_checkpoint(tmp_path / "one"))
    two = checkpoint.load(final_checkpoint(two_ranks[family]))
    assert one["loop"]["cur_nimg"] == two["loop"]["cur_nimg"] == 8
    return one, two


@pytest.mark.timeout(300)
def test_two_gloo_ranks_train_attention_like_one_process_with_accumulation(datasets, two_ranks, tmp_path):
    one, two = _one_and_two("attention", datasets, two_ranks, tmp_path)
    assert one["G"]["synthesis.b8.attn.gain"] != 0
    for net in ("G", "D", "G_ema"):
        for name, value in one[net].items():
            if name.endswith("w_avg"):  # averaged over ranks per step vs. updated per micro-batch: differs slightly
                continue
            # Adam's first step divides by the gradient's own magnitude: the order of float sums (two ranks, or two
            # micro-batches) moves a step of lr 0.0025 by up to ~1e-6
            torch.testing.assert_close(two[net][name], value, rtol=1e-4, atol=3e-6, msg=f"{net}.{name}")


@pytest.mark.timeout(300)
def test_two_gloo_ranks_train_tiny3_like_one_process_with_accumulation(datasets, two_ranks, tmp_path):
    """magnitude_ema is updated per micro-batch round and averaged over ranks, so the second micro-batch of the one
    process sees a slightly different normalisation than rank 1 does: gradients agree to 1e-3, weights within a
    tenth of Adam's step (lr)."""
    one, two = _one_and_two("tiny3", datasets, two_ranks, tmp_path)
    for opt in ("opt_G", "opt_D"):
        for index, moments in one[opt]["state"].items():
            grad, scale = moments["exp_avg"], moments["exp_avg"].abs().max().item()
            torch.testing.assert_close(two[opt]["state"][index]["exp_avg"], grad, rtol=0, atol=1e-3 * scale)
    for net in ("G", "D", "G_ema"):
        for name, value in one[net].items():
            if not name.endswith("w_avg"):  # per micro-batch vs. averaged over ranks: moves at a different rate
                torch.testing.assert_close(two[net][name], value, rtol=0, atol=2.5e-4, msg=f"{net}.{name}")
    magnitudes = [name for name in one["G"] if name.endswith("magnitude_ema")]
    assert all(abs(two["G"][k].item() - one["G"][k].item()) < 1e-6 for k in magnitudes)
    assert all(one["G"][k].item() != 1.0 for k in magnitudes)  # tracked in both


@pytest.mark.timeout(300)
def test_two_gloo_ranks_train_tiny_r3gan_like_one_process_with_accumulation(datasets, two_ranks, tmp_path):
    """R3GAN keeps no running statistics, so the two differ only by the order of float sums."""
    one, two = _one_and_two("tiny-r3gan", datasets, two_ranks, tmp_path)
    for net in ("G", "D", "G_ema"):
        for name, value in one[net].items():
            torch.testing.assert_close(two[net][name], value, rtol=0, atol=1e-6, msg=f"{net}.{name}")
