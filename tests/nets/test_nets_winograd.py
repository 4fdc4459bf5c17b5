"""Winograd F(4x4, 3x3) convolution against the direct convolution: the transform identity exactly in fractions, the
float64 result to rounding, float32 within its error bound, and its first and second derivatives (R1 needs both)."""

from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F

from ganforge.nets import winograd
from ganforge.nets.layers import Conv2dLayer, conv2d_same


def test_transform_matrices_compute_a_correlation_exactly():
    # A^T [(G g) * (B^T d)] = sum_k g_k d_{i+k} for every tap k and input position l: the 1D identity of Lavin & Gray
    # 2016, Eq. 5, whose Kronecker square gives the 2D algorithm
    a_t, g, b_t = winograd.transform_matrices()
    for i in range(winograd.TILE):
        for k in range(winograd.TAPS):
            for position in range(winograd.SPAN):
                total = sum(a_t[i][j] * g[j][k] * b_t[j][position] for j in range(winograd.SPAN))
                assert total == Fraction(int(position == i + k)), (i, k, position)


@pytest.mark.parametrize("shape", [(2, 5, 8, 8), (3, 4, 7, 9), (1, 2, 1, 1), (2, 3, 13, 4)])
def test_float64_result_equals_the_direct_convolution(shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    w = torch.randn(6, shape[1], 3, 3, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(winograd.conv3x3(x, w), F.conv2d(x, w, padding=1), rtol=0, atol=1e-12)


def test_float32_error_stays_within_ten_times_the_direct_convolutions():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 64, 16, 16, generator=gen, dtype=torch.float64)
    w = torch.randn(32, 64, 3, 3, generator=gen, dtype=torch.float64) / 24
    exact = F.conv2d(x, w, padding=1)
    ours = (winograd.conv3x3(x.float(), w.float()).double() - exact).abs().max()
    direct = (F.conv2d(x.float(), w.float(), padding=1).double() - exact).abs().max()
    assert ours < 10 * direct and ours < 1e-5 * exact.abs().max()


def test_samples_in_chunks_and_tile_entries_in_groups_give_the_same_result(monkeypatch):
    x = torch.randn(5, 3, 9, 6, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    whole = winograd.conv3x3(x, w)
    monkeypatch.setattr(winograd, "CHUNK_BYTES", 1)  # one sample per chunk
    monkeypatch.setattr(winograd, "GROUP_BYTES", 1)  # six groups of six tile entries
    assert len(winograd._entry_groups(8)) == 6
    torch.testing.assert_close(winograd.conv3x3(x, w), whole, rtol=0, atol=1e-12)


@pytest.mark.parametrize("split_bytes", [1, 2**30])
def test_first_and_second_derivatives_match_finite_differences(monkeypatch, split_bytes):
    monkeypatch.setattr(winograd, "CHUNK_BYTES", split_bytes)
    monkeypatch.setattr(winograd, "GROUP_BYTES", split_bytes)
    # small enough for the slow (full Jacobian) check: 7 s with one sample per chunk on 2 overloaded cores
    x = torch.randn(2, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(winograd.conv3x3, (x, w))
    assert torch.autograd.gradgradcheck(winograd.conv3x3, (x, w))


def test_used_only_for_large_float32_convolutions_on_cpu_outside_autocast():
    w = torch.zeros(256, 256, 3, 3)
    assert winograd.worth_it(w, 16 * 16) and winograd.runnable(torch.zeros(1, 256, 16, 16))
    assert not winograd.worth_it(w, 8 * 8)  # too few pixels
    assert not winograd.worth_it(torch.zeros(256, 128, 3, 3), 16 * 16)  # too few channels
    assert not winograd.worth_it(torch.zeros(256, 256, 1, 1), 16 * 16)
    assert not winograd.runnable(torch.zeros(1, 256, 16, 16, dtype=torch.float64))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not winograd.runnable(torch.zeros(1, 256, 16, 16))


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # the traced constant is what is under test
@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated:DeprecationWarning")  # ONNX's legacy path uses it
def test_graphs_being_compiled_or_exported_get_the_plain_convolution():
    x = torch.zeros(1, 256, 16, 16)
    traced = torch.jit.trace(lambda x: torch.tensor(winograd.runnable(x)), (x,), check_trace=False)
    assert not traced(x)
    exported = torch.export.export(_Runnable(), (x,)).module()
    assert not exported(x) and winograd.runnable(x)


class _Runnable(torch.nn.Module):
    def forward(self, x):
        return torch.tensor(winograd.runnable(x))


def test_discriminator_layer_takes_the_winograd_path_and_keeps_its_values(monkeypatch):
    torch.manual_seed(0)
    layer = Conv2dLayer(8, 8, 3, "lrelu")
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(2, 8, 8, 8)
    direct = layer(x, gain=0.5)
    calls = []
    monkeypatch.setattr(winograd, "conv3x3", lambda *args, real=winograd.conv3x3: calls.append(args) or real(*args))
    layer.winograd = True  # as a network built for CPU sets it on its large layers
    torch.testing.assert_close(layer(x, gain=0.5), direct, rtol=1e-5, atol=1e-5)
    assert calls and conv2d_same(x, layer.weight, fast=True).is_contiguous(memory_format=torch.channels_last)


def test_networks_choose_winograd_when_built_for_cpu_and_only_for_layers_where_it_pays():
    from ganforge.nets import Discriminator, Generator

    G = Generator(resolution=32, z_dim=8, w_dim=8, mapping_layers=1, channel_base=256 * 32, channel_max=256)
    D = Discriminator(resolution=32, channel_base=256 * 32, channel_max=256)
    convs = [m for m in [*G.modules(), *D.modules()] if hasattr(m, "winograd")]
    assert not any(m.winograd for m in convs) and not D.channels_last_input  # a reference network by default
    G.use_cpu_kernels()
    D.use_cpu_kernels()
    chosen = sorted(getattr(m, "resolution", 0) for m in G.synthesis.modules() if getattr(m, "winograd", False))
    assert chosen == [16, 32]  # the same-size convolutions at 16 and 32 px; 4 and 8 px are too small
    assert D.channels_last_input and D.b32.conv0.winograd and D.b16.conv0.winograd and not D.b8.conv0.winograd
