"""A whole training step of tiny networks with a choice of fused-op kernels against the same step with the
reference ops: on CPU through Triton's interpreter (test_kernels_triton.py), and compiled on a CUDA GPU
(kernels_on_cuda.py)."""

import copy
import dataclasses

import torch
import torch.nn.functional as F

from ganforge.nets import Discriminator, Generator, StyleGAN3Generator
from ganforge.nets.kernels import use_kernels
from ganforge.nets.layers import downsample2d, fir_filter, fir_kernel, upsample2d
from ganforge.nets.ops import FusedOps


def tiny_networks(device: torch.device):
    torch.manual_seed(1)
    arch = dict(resolution=16, img_channels=3, c_dim=0, channel_base=256, channel_max=16)
    G = Generator(z_dim=8, w_dim=8, mapping_layers=2, conv_clamp=256, **arch)
    return G.to(device), Discriminator(**arch).to(device)


def step_gradients(G, D, z):
    """The gradients of one G step, one D step with R1 (a gradient of a gradient through D) and one path-length
    penalty (through G's synthesis), as `train/phases.py` takes them, by parameter name."""
    img = G(z, None)
    loss = F.softplus(-D(img, None)).mean()
    reals = torch.randn(2, 3, 16, 16, device=z.device, requires_grad=True)
    (r1,) = torch.autograd.grad(D(reals, None).sum(), reals, create_graph=True)
    ws = G.mapping(z, None)
    fakes = G.synthesis(ws)
    (pl,) = torch.autograd.grad((fakes * torch.randn_like(fakes)).sum(), ws, create_graph=True)
    total = loss + r1.square().sum() + pl.square().sum()
    grads = torch.autograd.grad(total, [*G.parameters(), *D.parameters()], allow_unused=True)
    names = [f"G.{n}" for n, _ in G.named_parameters()] + [f"D.{n}" for n, _ in D.named_parameters()]
    return img, dict(zip(names, grads, strict=True))


def assert_resamplers_equal(ops: FusedOps, x: torch.Tensor) -> None:
    """fir_filter, upsample2d and downsample2d of `ops` equal the reference's on `x`: values and input gradients."""
    f = fir_kernel().to(x.device)
    pairs = [(upsample2d, ops.upsample2d), (downsample2d, ops.downsample2d),
             (lambda x, f: fir_filter(x, f, 2, 4.0), lambda x, f: ops.fir_filter(x, f, 2, 4.0))]  # fmt: skip
    for reference, kernel in pairs:
        expected, got = reference(x, f), kernel(x, f)
        torch.testing.assert_close(got, expected)
        g = torch.randn_like(expected)
        torch.testing.assert_close(torch.autograd.grad(got, x, g)[0], torch.autograd.grad(expected, x, g)[0])


def assert_step_equal(ops: FusedOps, device: torch.device) -> None:
    """Images and every parameter's gradient of a step with `ops` equal the reference step's within float32
    rounding."""
    G, D = tiny_networks(device)
    G_kernels, D_kernels = copy.deepcopy(G), copy.deepcopy(D)
    use_kernels(ops, G_kernels, D_kernels)
    assert {m.ops.name for m in G_kernels.modules() if hasattr(m, "ops")} == {ops.name}
    z = torch.randn(2, 8, device=device)
    torch.manual_seed(2)  # the same noise in both
    img, expected = step_gradients(G, D, z)
    torch.manual_seed(2)
    img_kernels, got = step_gradients(G_kernels, D_kernels, z)
    torch.testing.assert_close(img_kernels, img, rtol=1e-4, atol=1e-5)
    for name, grad in expected.items():
        assert (grad is None) == (got[name] is None), name
        if grad is not None:
            torch.testing.assert_close(got[name], grad, rtol=1e-3, atol=1e-5, msg=name)


def assert_sg3_step_equal(ops: FusedOps, device: torch.device, config: str) -> None:
    """A tiny StyleGAN3 generator (config "t" or "r", 16 px, four layers) with `ops` against the reference: the
    images, and every parameter's gradient of a G loss plus the path-length penalty (a gradient of a gradient
    through every filtered leaky ReLU). The discriminator is StyleGAN2's, which assert_step_equal covers."""
    torch.manual_seed(1)
    G = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=4, mapping_layers=1,
                           num_layers=3, conv_clamp=1.0, config=config).to(device)  # fmt: skip
    G_kernels, calls = copy.deepcopy(G), []
    counted = lambda *args, **kwargs: calls.append(1) or ops.filtered_lrelu(*args, **kwargs)  # noqa: E731
    use_kernels(dataclasses.replace(ops, filtered_lrelu=counted), G_kernels)  # the layers must call it, not own
    assert {m.ops.name for m in G_kernels.modules() if hasattr(m, "ops")} == {ops.name}
    z, pl_noise, loss_weights = torch.randn(2, 8, device=device), *torch.randn(2, 2, 3, 16, 16, device=device)
    results = []
    for network in (G, G_kernels):
        ws = network.mapping(z, None)
        img = network.synthesis(ws)
        (pl,) = torch.autograd.grad((img * pl_noise).sum(), ws, create_graph=True)
        total = (img * loss_weights).sum() + pl.square().sum()
        results.append((img, torch.autograd.grad(total, list(network.parameters()), allow_unused=True)))
    (img, expected), (img_kernels, got) = results
    torch.testing.assert_close(img_kernels, img, rtol=1e-4, atol=1e-5)
    assert len(calls) == len(G.synthesis.layer_names)
    for (name, _), want, have in zip(G.named_parameters(), expected, got, strict=True):
        assert (want is None) == (have is None), name
        if want is not None:
            torch.testing.assert_close(have, want, rtol=1e-3, atol=1e-5, msg=name)
