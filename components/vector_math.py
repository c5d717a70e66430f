"""Portable vector math: the element-wise functions whose MKL kernels round by the CPU's vendor.

PyTorch computes sqrt, log, tan, atan and a few more of float32 and float64 CPU tensors with
MKL's vector math (VML). Under `MKL_CBWR=COMPATIBLE` every x86 CPU runs the same VML kernels,
but for the functions below those kernels start from the CPU's approximate reciprocal
instructions (RCPPS, RSQRTPS) and refine from there. Those instructions are only specified to
about 12 bits, and Intel's and AMD's give different bits, so the refined results differ in the
last bit between vendors: a FOCAL run's metrics on an AMD EPYC moved by 2e-10 relative against
the same run on an Intel Xeon, through `torch.sqrt` in the distance metric loss. (MKL's matrix
products, and its exp, log, tanh, erf, sin and cos of float32, use no such instruction.)

With portable numerics, `install()` replaces the CPU kernels of those functions (and their
in-place forms) by ones built from operations every x86 CPU rounds alike: IEEE arithmetic,
PyTorch's own vectorised kernels (SLEEF's atan2 and pow, the C library's log) and the VML
kernels that use no approximate instruction. Each replacement is within a few units in the last
place of the function (sqrt of float32 is exact: computed in float64, then rounded once).
Autograd is unchanged (it sits above the CPU kernel). The `out=` forms keep MKL's kernels: they
are the way back to them, for the dtypes whose MKL kernel is portable.
"""

from __future__ import annotations

import math

from components.cpu_kernels import Replacement

# MKL vector-math functions whose COMPATIBLE kernels use RCPPS/RSQRTPS (read from the
# disassembly of the oneMKL 2024.0 that torch 2.13 carries), by the dtypes they do so for
REPLACED = {
    "sqrt": ("float32", "float64"),
    "log": ("float64",),
    "log2": ("float32", "float64"),
    "log10": ("float32", "float64"),
    "tan": ("float32", "float64"),
    "atan": ("float32", "float64"),
    "asin": ("float32", "float64"),
    "acos": ("float32", "float64"),
}


def installed() -> bool:
    """Whether this process computes the functions above with the portable kernels."""
    return _replacement.installed


def install() -> None:
    """Replace the CPU kernels of the functions in `REPLACED` (idempotent)."""
    _replacement.install()


def _formulas():
    import torch

    def sqrt(x):
        if x.dtype == torch.float32:  # exact: float64's error is far below float32's half-ulp
            y = torch.float_power(x, 0.5).to(x.dtype)
        else:
            y = torch.pow(x, torch.full_like(x, 0.5))  # SLEEF's pow: within 1 ulp
        return torch.where(x == 0, x, y)  # sqrt(-0.0) is -0.0

    def log(x):
        if x.dtype == torch.float32:
            return torch.log(x, out=torch.empty_like(x))  # MKL's float32 log is portable
        return torch.special.xlogy(torch.ones_like(x), x)  # the C library's log

    def root_of_one_minus_square(x):  # sqrt(1 - x²), without cancelling near |x| = 1
        return sqrt((1 - x) * (1 + x))

    return {
        "sqrt": sqrt,
        "log": log,
        "log2": lambda x: log(x) / math.log(2),
        "log10": lambda x: log(x) / math.log(10),
        "tan": lambda x: torch.sin(x) / torch.cos(x),
        "atan": lambda x: torch.atan2(x, torch.ones_like(x)),
        "asin": lambda x: torch.atan2(x, root_of_one_minus_square(x)),
        "acos": lambda x: torch.atan2(root_of_one_minus_square(x), x),
    }


def _functional(name: str):
    import torch

    formula = _formulas()[name]
    original = getattr(torch.ops.aten, name).out
    dtypes = {getattr(torch, d) for d in REPLACED[name]}

    def kernel(x):
        if not (x.is_floating_point() or x.is_complex()):  # integers compute in the default
            x = x.to(torch.get_default_dtype())
        if x.dtype in dtypes:
            return formula(x)
        return original(x, out=torch.empty_like(x))  # a dtype MKL's kernel does not round

    kernel.__name__ = f"portable_{name}"
    return kernel


def _in_place(name: str):
    import torch

    functional = _functional(name)
    original = getattr(torch.ops.aten, name).out

    def kernel(x):
        if x.is_floating_point():
            return x.copy_(functional(x))
        return original(x, out=x)  # refuses an integer tensor as before

    kernel.__name__ = f"portable_{name}_"
    return kernel


def _kernels() -> dict:
    """Each replaced function's kernel and its in-place form's."""
    kernels = {}
    for name in REPLACED:
        kernels[name], kernels[f"{name}_"] = _functional(name), _in_place(name)
    return kernels


_replacement = Replacement(_kernels)
