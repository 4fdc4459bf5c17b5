"""The networks on a CUDA GPU: the fused modulated convolution (chosen on CUDA for inference) equals the shared-weight
path, and CUDA forwards equal the CPU's. Needs a GPU (the `cuda` marker). cuDNN convolutions default to TF32, so the
fp32 comparisons run inside fp32_math(tf32=False)."""

import pytest
import torch

from dtype_helpers import record_dtype
from ganforge.nets import Discriminator, Generator
from ganforge.nets.layers import fir_kernel, modulated_conv2d, use_fused_modconv
from ganforge.numerics import fp32_math

pytestmark = pytest.mark.cuda
CUDA = torch.device("cuda")
ARCH = dict(resolution=16, channel_base=256, channel_max=16, img_channels=3)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float16, 2e-2)])
@pytest.mark.parametrize("up, demodulate", [(False, True), (True, True), (False, False)])
def test_fused_modconv_equals_the_shared_weight_path(dtype, tolerance, up, demodulate):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, 6, 6, generator=gen).to(CUDA, dtype)
    weight = torch.randn(5, 8, 3, 3, generator=gen).to(CUDA)
    styles = (torch.randn(4, 8, generator=gen) + 1).to(CUDA)
    f = fir_kernel().to(CUDA)
    with fp32_math(tf32=False):
        fused, plain = (modulated_conv2d(x, weight, styles, demodulate=demodulate, up=up, fused=flag,
                                         resample_filter=f) for flag in (True, False))  # fmt: skip
    assert fused.dtype == plain.dtype == dtype
    scale = plain.float().abs().max().item()
    torch.testing.assert_close(fused.float(), plain.float(), rtol=tolerance, atol=tolerance * scale)


def test_generator_inference_uses_the_fused_path_and_matches_training_mode_and_the_cpu():
    torch.manual_seed(1)
    G = Generator(z_dim=8, w_dim=8, mapping_layers=2, **ARCH)
    z = torch.randn(3, 8, generator=torch.Generator().manual_seed(2))
    c = torch.zeros(3, 0)
    with torch.no_grad(), fp32_math(tf32=False):
        on_cpu = G(z, c, noise_mode="const")
        G.to(CUDA)
        assert use_fused_modconv(False, torch.zeros(1, device=CUDA)) and not use_fused_modconv(True, z.to(CUDA))
        fused = G.eval()(z.to(CUDA), c.to(CUDA), noise_mode="const")
        plain = G.train()(z.to(CUDA), c.to(CUDA), noise_mode="const")
    torch.testing.assert_close(fused, plain, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(plain.cpu(), on_cpu, rtol=1e-4, atol=1e-5)


def test_fp16_resolutions_run_in_half_precision_and_stay_close_to_fp32():
    torch.manual_seed(3)
    fp32 = Generator(z_dim=8, w_dim=8, mapping_layers=2, **ARCH).to(CUDA)
    torch.manual_seed(3)
    fp16 = Generator(z_dim=8, w_dim=8, mapping_layers=2, num_fp16_res=2, conv_clamp=256, **ARCH).to(CUDA)
    torch.manual_seed(4)
    D = Discriminator(num_fp16_res=2, conv_clamp=256, **ARCH).to(CUDA)
    dtypes = {}
    fp16.synthesis.b16.conv1.register_forward_hook(record_dtype(dtypes, "G b16"))
    D.b16.conv0.register_forward_hook(record_dtype(dtypes, "D b16"))
    z = torch.randn(4, 8, generator=torch.Generator().manual_seed(5)).to(CUDA)
    c = torch.zeros(4, 0, device=CUDA)
    with torch.no_grad(), fp32_math(tf32=False):
        half, full = fp16(z, c, noise_mode="const"), fp32(z, c, noise_mode="const")
        logits = D(half, c)
    assert dtypes == {"G b16": torch.float16, "D b16": torch.float16}
    assert half.dtype == logits.dtype == torch.float32 and torch.isfinite(logits).all()
    torch.testing.assert_close(half, full, rtol=0, atol=5e-2 * full.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_r1_through_attention_on_cuda_has_the_second_derivative_of_the_cpu(dtype):
    """The fused attention kernels CUDA picks have no second derivative; R1's pass runs under twice_differentiable
    (nets/attention.py) and gives, in fp32, the CPU's gradient of the penalty; fp16 blocks (num_fp16_res) run it too."""
    from ganforge.nets.attention import twice_differentiable

    torch.manual_seed(0)
    D = Discriminator(**ARCH, attention=[16, 8], num_fp16_res=2 if dtype == torch.float16 else 0, conv_clamp=256)
    with torch.no_grad():
        for block in (D.b16.attn, D.b8.attn):
            block.gain.fill_(0.5)
    reals = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))

    def penalty_grads(device):
        net = D.to(device)
        net.zero_grad()
        x = reals.to(device).requires_grad_(True)
        with twice_differentiable(), fp32_math(tf32=False):
            (grad,) = torch.autograd.grad(net(x, torch.zeros(4, 0, device=device)).sum(), x, create_graph=True)
            grad.square().sum().backward()
        return {name: p.grad.detach().float().cpu() for name, p in net.named_parameters() if "attn" in name}

    on_cuda = penalty_grads(CUDA)
    assert all(torch.isfinite(g).all() for g in on_cuda.values()) and on_cuda["b16.attn.gain"].abs() > 0
    if dtype == torch.float32:
        on_cpu = penalty_grads(torch.device("cpu"))
        for name, grad in on_cpu.items():
            torch.testing.assert_close(on_cuda[name], grad, rtol=1e-3, atol=1e-4 * grad.abs().max().item(), msg=name)
