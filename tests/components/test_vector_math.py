"""Portable vector math (components/vector_math.py): with portable numerics, the functions whose
MKL kernels start from the CPU's approximate reciprocal instructions are computed by kernels
every x86 CPU rounds alike, close to the true function, with autograd and dtypes unchanged."""

import math

import numpy as np
import pytest
import torch

from components import numerics, vector_math

# the suite runs with portable numerics (tests/conftest.py), so state() installs them
numerics.state()

SAMPLE = np.concatenate([np.linspace(-0.999, 0.999, 2001), np.geomspace(1e-30, 1e30, 2001)])
REFERENCE = {  # numpy's float64 functions, the truth each replacement is held to
    "sqrt": np.sqrt,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "tan": np.tan,
    "atan": np.arctan,
    "asin": np.arcsin,
    "acos": np.arccos,
}


def test_state_records_the_portable_vector_math():
    assert vector_math.installed()
    assert numerics.state()["vector_math"] == "portable"


def test_float32_sqrt_is_correctly_rounded_for_every_significand():
    """Every float32 in [1, 4) (each significand, with both exponent parities, so every normal
    float32 up to a power of four) against numpy's IEEE sqrt."""
    bits = torch.arange(0x3F800000, 0x40800000, 7, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    assert torch.equal(torch.sqrt(x), torch.from_numpy(np.sqrt(x.numpy())))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(vector_math.REPLACED))
def test_each_replacement_is_within_a_few_ulp_of_the_function(name, dtype):
    inside = np.abs(SAMPLE) < 1 if name in ("asin", "acos") else SAMPLE > 0
    x = torch.tensor(SAMPLE[inside], dtype=dtype)
    found = getattr(torch, name)(x).double().numpy()
    truth = REFERENCE[name](x.double().numpy())
    ulp = np.spacing(np.abs(truth).astype(torch.empty(0, dtype=dtype).numpy().dtype)).astype(float)
    assert np.all(np.abs(found - truth) <= 4 * ulp + 1e-300), name


@pytest.mark.parametrize("name", sorted(vector_math.REPLACED))
def test_special_values_keep_their_meaning(name):
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, -2.0, math.inf, math.nan])
    found = getattr(torch, name)(x).numpy()
    with np.errstate(all="ignore"):
        truth = REFERENCE[name](x.numpy().astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(found), np.isnan(truth))
    finite = ~np.isnan(truth) & np.isfinite(truth)
    np.testing.assert_allclose(found[finite], truth[finite], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(
        np.signbit(found[x.numpy() == 0]), np.signbit(truth[x.numpy() == 0])
    )


def test_in_place_integer_and_other_dtypes_behave_as_torch_does():
    x = torch.tensor([4.0, 9.0])
    assert x.sqrt_() is x and x.tolist() == [2.0, 3.0]
    assert torch.sqrt(torch.tensor([4, 9])).dtype == torch.get_default_dtype()
    with pytest.raises(RuntimeError):
        torch.tensor([4, 9]).sqrt_()  # an integer tensor cannot hold its root, as before
    half = torch.tensor([4.0, 2.0], dtype=torch.bfloat16)
    assert torch.sqrt(half).dtype == torch.bfloat16
    assert torch.sqrt(half).tolist() == [2.0, torch.tensor(2.0**0.5, dtype=torch.bfloat16).item()]


def test_gradients_are_unchanged():
    x = torch.tensor([0.25, 4.0, 0.5], dtype=torch.float64, requires_grad=True)
    for name, derivative in {
        "sqrt": lambda v: 0.5 / v.sqrt(),
        "log": lambda v: 1 / v,
        "atan": lambda v: 1 / (1 + v**2),
        "asin": lambda v: 1 / (1 - v**2).sqrt(),
    }.items():
        inputs = x if name != "asin" else x / 5
        (grad,) = torch.autograd.grad(getattr(torch, name)(inputs).sum(), x)
        expected = derivative(inputs.detach()) * (0.2 if name == "asin" else 1.0)
        torch.testing.assert_close(grad, expected, rtol=1e-12, atol=0)
