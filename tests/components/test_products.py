"""Portable matrix products (components/products.py): with portable numerics, float32 `mm`,
`addmm`, `bmm` and `baddbmm` are numpy's OpenBLAS product to the bit, forward and backward, with
PyTorch's semantics (broadcast bias, alpha and beta, beta = 0 not reading `self`, empty shapes)
and PyTorch's own errors; other dtypes keep PyTorch's kernels."""

import numpy as np
import pytest
import torch

from components import numerics, products

# the suite runs with portable numerics (tests/conftest.py), so state() installs them
numerics.state()


def ours(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The OpenBLAS product the kernels promise, computed by numpy directly."""
    return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))


def mkl(op, *args, **kwargs) -> torch.Tensor:
    """PyTorch's own kernel for `op` (its out= form, which products.py leaves alone)."""
    out = torch.empty(0, dtype=args[-1].dtype)
    return getattr(torch.ops.aten, op).out(*args, **kwargs, out=out)


def test_state_records_the_portable_products():
    assert products.installed()
    assert numerics.state()["products"] == "openblas"


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def test_each_product_is_openblas_to_the_bit(gen):
    a, b = torch.randn(37, 19, generator=gen), torch.randn(19, 23, generator=gen)
    bias = torch.randn(23, generator=gen)
    stack_a, stack_b = torch.randn(3, 37, 19, generator=gen), torch.randn(3, 19, 23, generator=gen)
    stack_bias = torch.randn(3, 1, 23, generator=gen)
    assert torch.equal(torch.mm(a, b), ours(a, b))
    assert torch.equal(a @ b, ours(a, b))
    assert torch.equal(torch.addmm(bias, a, b), ours(a, b) + bias)
    assert torch.equal(torch.addmm(bias, a, b, beta=0.5, alpha=2), ours(a, b) * 2 + bias * 0.5)
    assert torch.equal(torch.bmm(stack_a, stack_b), ours(stack_a, stack_b))
    assert torch.equal(
        torch.baddbmm(stack_bias, stack_a, stack_b, alpha=3),
        ours(stack_a, stack_b) * 3 + stack_bias,
    )
    # a transposed operand, as a backward pass gives one: OpenBLAS reads it in place
    assert torch.equal(torch.mm(a.t(), a), ours(a.t(), a))
    # and the products are close to the exact ones: a product, not merely a fixed function
    exact = a.double() @ b.double()
    assert torch.allclose(torch.mm(a, b).double(), exact, rtol=0, atol=1e-5)


def test_gradients_flow_through_the_products(gen):
    layer = torch.nn.Linear(11, 5)
    x = torch.randn(7, 11, generator=gen, requires_grad=True)
    layer(x).square().sum().backward()
    with torch.no_grad():
        y = ours(x.detach(), layer.weight.t().contiguous()) + layer.bias
        grad_y = 2 * y
    assert torch.equal(layer.bias.grad, grad_y.sum(0))
    assert torch.allclose(layer.weight.grad, grad_y.t() @ x.detach(), rtol=0, atol=1e-6)
    assert torch.allclose(x.grad, grad_y @ layer.weight.detach(), rtol=0, atol=1e-6)


def test_beta_zero_does_not_read_self(gen):
    nan = torch.full((4, 6), float("nan"))
    a, b = torch.randn(4, 3, generator=gen), torch.randn(3, 6, generator=gen)
    assert torch.equal(torch.addmm(nan, a, b, beta=0), ours(a, b))
    assert torch.equal(torch.baddbmm(nan[None], a[None], b[None], beta=0), ours(a, b)[None])


def test_empty_shapes_are_products_too():
    assert torch.mm(torch.ones(0, 3), torch.ones(3, 5)).shape == (0, 5)
    assert torch.equal(torch.mm(torch.ones(2, 0), torch.ones(0, 5)), torch.zeros(2, 5))
    assert torch.bmm(torch.ones(0, 2, 3), torch.ones(0, 3, 4)).shape == (0, 2, 4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_other_dtypes_keep_pytorchs_kernels(dtype, gen):
    a = torch.randn(9, 13, generator=gen).to(dtype)
    b = torch.randn(13, 6, generator=gen).to(dtype)
    bias = torch.randn(6, generator=gen).to(dtype)
    assert torch.mm(a, b).dtype == dtype
    assert torch.equal(torch.mm(a, b), mkl("mm", a, b))
    assert torch.equal(torch.addmm(bias, a, b), mkl("addmm", bias, a, b))
    assert torch.equal(torch.bmm(a[None], b[None]), mkl("bmm", a[None], b[None]))


@pytest.mark.parametrize(
    "call, said",
    [
        (lambda: torch.mm(torch.ones(2, 3), torch.ones(4, 5)), "shapes cannot be multiplied"),
        (lambda: torch.mm(torch.ones(3), torch.ones(3, 5)), "must be a matrix"),
        (lambda: torch.mm(torch.ones(2, 3), torch.ones(3, 5).double()), "same dtype"),
        (lambda: torch.bmm(torch.ones(4, 2, 3), torch.ones(3, 3, 5)), "batch2"),
        (lambda: torch.addmm(torch.ones(7), torch.ones(2, 3), torch.ones(3, 5)), "size"),
    ],
)
def test_bad_operands_get_pytorchs_own_errors(call, said):
    with pytest.raises(RuntimeError, match=said):
        call()
