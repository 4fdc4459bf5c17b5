"""FIR resampling's derivatives (its backward is a custom adjoint, so R1 and path length rest on them): first and
second derivatives against finite differences, and the adjoint identity <L x, y> = <x, L^T y> for odd sizes too."""

import pytest
import torch

from ganforge.nets.layers import downsample2d, fir_filter, fir_kernel, upsample2d

F64 = fir_kernel().double()
OPS = {
    "filter": lambda x: fir_filter(x, F64, pad=2, gain=1.5),
    "up": lambda x: upsample2d(x, F64),
    "down": lambda x: downsample2d(x, F64),
}


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("size", [(5, 6), (7, 7)])
def test_first_and_second_derivatives_match_finite_differences(name, size):
    x = torch.randn(2, 3, *size, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(OPS[name], (x,))
    assert torch.autograd.gradgradcheck(OPS[name], (x,))


@pytest.mark.parametrize("name", OPS)
def test_backward_is_the_adjoint_and_keeps_the_input_size(name):
    x = torch.randn(2, 3, 9, 6, dtype=torch.float64, requires_grad=True)
    y = OPS[name](x)
    probe = torch.randn_like(y)
    (adjoint,) = torch.autograd.grad(y, x, probe)
    assert adjoint.shape == x.shape
    torch.testing.assert_close((y * probe).sum(), (x * adjoint).sum(), rtol=1e-12, atol=0)
