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
    assert winograd.pays_off(torch.zeros(1, 256, 16, 16), w)
    assert not winograd.pays_off(torch.zeros(1, 256, 8, 8), w)  # too few pixels
    assert not winograd.pays_off(torch.zeros(1, 128, 16, 16), torch.zeros(256, 128, 3, 3))  # too few channels
    assert not winograd.pays_off(torch.zeros(1, 256, 16, 16, dtype=torch.float64), w.double())
    assert not winograd.pays_off(torch.zeros(1, 256, 16, 16), torch.zeros(256, 256, 1, 1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not winograd.pays_off(torch.zeros(1, 256, 16, 16), w)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # the traced constant is what is under test
@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated:DeprecationWarning")  # ONNX's legacy path uses it
def test_graphs_being_compiled_or_exported_get_the_plain_convolution():
    x, w = torch.zeros(1, 256, 16, 16), torch.zeros(256, 256, 3, 3)
    traced = torch.jit.trace(lambda x: torch.tensor(winograd.pays_off(x, w)), (x,), check_trace=False)
    assert not traced(x)
    exported = torch.export.export(_PaysOff(w), (x,)).module()
    assert not exported(x) and winograd.pays_off(x, w)


class _PaysOff(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return torch.tensor(winograd.pays_off(x, self.w))


def test_discriminator_layer_takes_the_winograd_path_and_keeps_its_values(monkeypatch):
    torch.manual_seed(0)
    layer = Conv2dLayer(8, 8, 3, "lrelu")
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(2, 8, 8, 8)
    direct = layer(x, gain=0.5)
    calls = []
    monkeypatch.setattr(winograd, "pays_off", lambda *args: calls.append(args) or True)
    torch.testing.assert_close(layer(x, gain=0.5), direct, rtol=1e-5, atol=1e-5)
    assert calls and conv2d_same(x, layer.weight).is_contiguous(memory_format=torch.channels_last)
