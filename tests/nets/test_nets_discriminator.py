"""Discriminator behaviour at tiny channel counts: shapes, gradients, minibatch stddev, conditioning."""

import pytest
import torch

from ganforge.errors import UserError
from ganforge.nets import Discriminator
from ganforge.nets.discriminator import MinibatchStdLayer

TINY = dict(channel_base=128, channel_max=8)


def tiny_discriminator(seed=0, **kwargs) -> Discriminator:
    torch.manual_seed(seed)
    return Discriminator(**{**TINY, "resolution": 16, **kwargs})


@pytest.mark.parametrize("resolution", [8, 16, 32, 64, 128, 256])
def test_output_shape_and_dtype(resolution):
    channels = 1 + resolution % 5
    D = tiny_discriminator(resolution=resolution, img_channels=channels, channel_base=2 * resolution)
    logits = D(torch.randn(4, channels, resolution, resolution), torch.zeros(4, 0))
    assert logits.shape == (4, 1) and logits.dtype == torch.float32 and torch.isfinite(logits).all()


def test_gradients_reach_every_parameter_and_the_image():
    D = tiny_discriminator(c_dim=3)
    img = torch.randn(4, 3, 16, 16, requires_grad=True)
    c = torch.eye(3)[[0, 1, 2, 0]]
    D(img, c).sum().backward()
    assert img.grad is not None and img.grad.abs().sum() > 0
    for name, p in D.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient for {name}"


def test_every_block_works_in_channels_last_on_cpu():
    # one layout through each block's skip path and residual sum (the Winograd convolutions return channels-last)
    D = tiny_discriminator(resolution=32)
    D.use_cpu_kernels()
    outputs = []
    for res in D.block_resolutions:
        getattr(D, f"b{res}").register_forward_hook(lambda module, args, output: outputs.append(output[0]))
    D(torch.randn(4, 3, 32, 32), torch.zeros(4, 0))
    assert len(outputs) == 3 and all(x.is_contiguous(memory_format=torch.channels_last) for x in outputs)


def test_minibatch_stddev_matches_reference():
    x = torch.randn(4, 3, 2, 2)
    y = MinibatchStdLayer(group_size=2)(x)
    assert y.shape == (4, 4, 2, 2) and torch.equal(y[:, :3], x)
    for i in range(4):
        group = x[[i % 2, i % 2 + 2]]  # sample i is grouped with the samples N/G apart
        expected = group.std(dim=0, unbiased=False).mean()
        assert torch.allclose(y[i, 3], expected.expand(2, 2), atol=1e-5)


def test_minibatch_stddev_uses_the_whole_batch_when_smaller_than_the_group():
    x = torch.randn(2, 3, 2, 2)
    y = MinibatchStdLayer(group_size=4)(x)
    assert torch.allclose(y[:, 3], x.std(dim=0, unbiased=False).mean().expand(2, 2, 2), atol=1e-5)


def test_minibatch_stddev_groups_stacked_batches_each_on_its_own():
    x = torch.randn(16, 3, 2, 2, dtype=torch.float64)
    stacked = MinibatchStdLayer(group_size=4)(x, batches=2)
    layer = MinibatchStdLayer(group_size=4)
    assert torch.equal(stacked, torch.cat([layer(x[:8]), layer(x[8:])]))
    assert not torch.allclose(stacked, layer(x))  # one batch of 16 groups samples of both halves together


def test_stacked_batches_give_the_logits_and_gradients_of_one_call_per_batch():
    D = tiny_discriminator(c_dim=3).double()
    fakes, reals = torch.randn(4, 3, 16, 16, dtype=torch.float64), torch.randn(4, 3, 16, 16, dtype=torch.float64)
    c = torch.eye(3, dtype=torch.float64)[[0, 1, 2, 0]]
    separate = torch.cat([D(fakes, c), D(reals, c)])
    separate.square().sum().backward()
    expected_grads = [p.grad.clone() for p in D.parameters()]
    D.zero_grad()
    stacked = D(torch.cat([fakes, reals]), torch.cat([c, c]), batches=2)
    stacked.square().sum().backward()
    torch.testing.assert_close(stacked, separate, rtol=1e-6, atol=1e-7)  # the head runs in float32 whatever the input
    for p, expected in zip(D.parameters(), expected_grads, strict=True):
        torch.testing.assert_close(p.grad, expected, rtol=1e-5, atol=1e-7)


def test_projection_conditioning_depends_on_the_class():
    D = tiny_discriminator(c_dim=3)
    img = torch.randn(4, 3, 16, 16)
    a = D(img, torch.eye(3)[[0, 0, 0, 0]])
    b = D(img, torch.eye(3)[[1, 1, 1, 1]])
    assert not torch.allclose(a, b)


def test_bf16_autocast_forward_is_finite():
    D = tiny_discriminator(c_dim=2, conv_clamp=256)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = D(torch.randn(4, 3, 16, 16), torch.eye(2)[[0, 1, 0, 1]])
    assert logits.dtype == torch.float32 and torch.isfinite(logits).all()


def test_fp16_resolutions_are_fp32_on_cpu_and_generator_kwargs_are_ignored():
    D0 = tiny_discriminator(seed=2)
    D1 = tiny_discriminator(seed=2, num_fp16_res=2, z_dim=8, w_dim=8, mapping_layers=2)
    img = torch.randn(4, 3, 16, 16)
    assert torch.equal(D0(img, torch.zeros(4, 0)), D1(img, torch.zeros(4, 0)))
    assert "z_dim" not in D1.config and Discriminator(**D1.config).config == D1.config


def test_bad_arguments_raise_user_error():
    with pytest.raises(UserError) as err:
        Discriminator(resolution=12, mbstd_group_size=0)
    assert len(err.value.problems) == 2
    with pytest.raises(TypeError, match="mbstd_groupsize"):
        Discriminator(resolution=16, mbstd_groupsize=4)


def test_r1_penalty_double_backward_reaches_every_parameter():
    D = tiny_discriminator()
    img = torch.randn(4, 3, 16, 16, requires_grad=True)
    (grad,) = torch.autograd.grad(D(img, torch.zeros(4, 0)).sum(), img, create_graph=True)
    grad.square().sum().backward()  # R1 (Mescheder et al. 2018, Eq. 9) needs second derivatives of every op
    for name, p in D.named_parameters():
        if name.startswith("b4.") and name.endswith(".bias"):
            continue  # after minibatch stddev only piecewise-linear ops follow: d(grad)/d(bias) is exactly 0
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no R1 gradient for {name}"
