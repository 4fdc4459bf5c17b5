"""The architecture helpers of nets/layers.py, each against its rule written out: which resolutions run in fp16, the
block dtype, the recorded aspect, the fused-modconv choice, and check_arch's limits at their edges."""

from types import SimpleNamespace

import pytest
import torch

from ganforge.errors import UserError
from ganforge.nets import Generator
from ganforge.nets.layers import aspect_config, block_dtype, check_arch, fp16_min_resolution, use_fused_modconv


@pytest.mark.parametrize(
    ("resolution", "num_fp16_res", "lowest"),
    [(256, 4, 32), (256, 1, 256), (64, 0, 128), (16, 4, 8), (1024, 10, 8)],
)
def test_fp16_runs_in_the_top_resolutions_and_never_below_8(resolution, num_fp16_res, lowest):
    # the top num_fp16_res of the resolutions 4, 8, ..., resolution: 2^(log2(resolution) + 1 - num_fp16_res)
    assert fp16_min_resolution(resolution, num_fp16_res) == lowest


def test_a_generator_with_every_resolution_in_fp16_keeps_its_4x4_block_in_fp32():
    G = Generator(resolution=16, z_dim=4, w_dim=4, mapping_layers=1, channel_base=64, channel_max=4, num_fp16_res=3)
    assert [G.synthesis.b4.use_fp16, G.synthesis.b8.use_fp16, G.synthesis.b16.use_fp16] == [False, True, True]


@pytest.mark.parametrize("use_fp16", [False, True])
@pytest.mark.parametrize("force_fp32", [False, True])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_block_dtype_is_fp16_only_on_cuda_for_an_fp16_block_not_forced_to_fp32(use_fp16, force_fp32, device):
    fp16 = use_fp16 and not force_fp32 and device == "cuda"
    assert block_dtype(use_fp16, force_fp32, torch.device(device)) == (torch.float16 if fp16 else torch.float32)


def test_aspect_is_recorded_only_for_a_non_square_network():
    assert aspect_config((1, 1)) == aspect_config([1, 1]) == {}
    assert aspect_config((1, 2)) == {"aspect": [1, 2]}
    assert aspect_config([4, 1]) == {"aspect": [4, 1]}


@pytest.mark.parametrize(
    ("training", "device", "dtype", "batch", "fused"),
    [
        (False, "cuda", torch.float32, 4, True),
        (True, "cuda", torch.float32, 4, False),
        (False, "cpu", torch.float32, 4, False),
        (False, "cuda", torch.float16, 1, True),
        (False, "cuda", torch.float16, 4, False),
        (False, "cpu", torch.float16, 1, False),
    ],
)
def test_fused_modconv_is_chosen_for_cuda_inference_in_fp32_or_of_one_sample(training, device, dtype, batch, fused):
    # the choice reads only the device, dtype and batch size, so a CUDA tensor's description stands in for one
    x = SimpleNamespace(device=torch.device(device), dtype=dtype, shape=(batch, 4, 4, 4))
    assert use_fused_modconv(training, x) is fused


VALID = dict(resolution=16, img_channels=3, c_dim=0, z_dim=4, w_dim=4, channel_base=64, channel_max=4,
             mapping_layers=1, num_fp16_res=0, conv_clamp=None, architecture="skip")  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"conv_clamp": 256},
        {"conv_clamp": 0.5},
        {"attention": [8, 16]},
        {"channel_base": 16},  # one channel at the top resolution
        {"progressive": True, "stage": [16, 0.5]},
        {"resolution": 1024, "channel_base": 1024},  # no aspect given: square, valid up to the largest resolution
        {"aspect": (1, 2)},
    ],
)
def test_check_arch_accepts_values_at_the_edges_of_its_limits(change):
    check_arch(**(VALID | change))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"c_dim": -1}, "c_dim"),
        ({"num_fp16_res": -1}, "num_fp16_res"),
        ({"z_dim": 0}, "z_dim"),
        ({"mapping_layers": 1.0}, "mapping_layers"),
        ({"conv_clamp": 0}, "conv_clamp"),
        ({"conv_clamp": -0.5}, "conv_clamp"),
        ({"conv_clamp": "256"}, "conv_clamp"),
        ({"attention": [32]}, "attention"),
        ({"channel_base": 8}, "channel_base: 8 gives no channels at 16"),
        ({"stage": [16, 0.5]}, "needs a progressive network"),
        ({"aspect": (2, 2)}, "aspect"),
    ],
)
def test_check_arch_refuses_values_just_past_its_limits(change, named):
    with pytest.raises(UserError, match=named):
        check_arch(**(VALID | change))
