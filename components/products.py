"""Portable matrix products: float32 `mm`, `addmm`, `bmm` and `baddbmm` through numpy's OpenBLAS.

Under portable numerics PyTorch's float32 products run MKL's COMPATIBLE branch, the one branch
oneMKL promises to round alike on Intel and other CPUs. It is also MKL's slowest: at a behaviour
SAC's shapes (a few hundred rows, 20 to 256 columns) its products take 3 to 5 times as long as
the free path's, and they are most of a portable step.

numpy carries its own BLAS, OpenBLAS, which portable numerics already pin to one kernel set
(`OPENBLAS_CORETYPE=Haswell`: AVX2 and FMA) and one thread. That kernel set's block sizes are
constants of its source (they do not follow the CPU's cache sizes, as older core types' do), so
its float32 product is one fixed sequence of IEEE operations on every x86-64 CPU with AVX2 and
FMA: the same bits everywhere, as MKL's COMPATIBLE branch gives, at the free path's speed.

With portable numerics, `install()` replaces the CPU kernels of the four products (the ones
`nn.Linear`, `@`, `einsum` and the seed- and task-batched networks reach, forward and backward)
by `numpy.matmul` on the tensors' own memory. Other dtypes (bfloat16, float64, integers) keep
PyTorch's kernels: the `out=` forms, which this module leaves alone, are the way back to them.
Products PyTorch computes inside other kernels (scaled dot-product attention's) keep MKL's
COMPATIBLE branch, which is portable too.

The bits follow the shapes and memory layout, as every product's do, and nothing else: a
transposed operand is read in place (another order of sums than its contiguous copy), and a row
may round by its place in the matrix (equal rows of a 192×200 by 200×200 product differ in the
last bits at rows 6-11, 18-23, ...), the same on every CPU.
"""

from __future__ import annotations

from components.cpu_kernels import Replacement

REPLACED = ("mm", "addmm", "bmm", "baddbmm")


def installed() -> bool:
    """Whether this process computes float32 products with numpy's OpenBLAS."""
    return _replacement.installed


def install() -> None:
    """Replace the CPU kernels of the products in `REPLACED` (idempotent)."""
    _replacement.install()


def _kernels():
    import numpy as np
    import torch

    aten = torch.ops.aten

    def product(a, b):
        """a @ b (matrices or stacks of them) by OpenBLAS, in a tensor of its own."""
        return torch.from_numpy(np.matmul(a.numpy(force=True), b.numpy(force=True)))

    def scaled(result, self, beta, alpha):
        """beta * self + alpha * result, as addmm and baddbmm define it: with beta = 0, `self`
        is not read (a NaN in it does not propagate)."""
        if alpha != 1:
            result = result.mul_(alpha)
        if beta == 0:
            return result
        return result.add_(self if beta == 1 else self * beta)

    def portable(a, b, *others, stacked: bool) -> bool:
        """float32 operands of shapes that multiply; anything else goes to PyTorch's kernel,
        which computes it or refuses it with PyTorch's own message."""
        dims = 3 if stacked else 2
        return (
            all(t.dtype == torch.float32 for t in (a, b, *others))
            and a.dim() == b.dim() == dims
            and a.shape[-1] == b.shape[-2]
            and (not stacked or a.shape[0] == b.shape[0])
        )

    def shape(a, b):
        return (*a.shape[:-1], b.shape[-1]) if a.dim() >= 2 and b.dim() >= 1 else (0,)

    def plain(name: str, stacked: bool):
        """`mm` or `bmm`: a @ b."""
        fallback = getattr(aten, name).out

        def kernel(a, b):
            if portable(a, b, stacked=stacked):
                return product(a, b)
            return fallback(a, b, out=a.new_empty(shape(a, b)))

        return kernel

    def added(name: str, stacked: bool):
        """`addmm` or `baddbmm`: beta * self + alpha * (a @ b)."""
        fallback = getattr(aten, name).out

        def kernel(self, a, b, *, beta=1, alpha=1):
            if portable(a, b, self, stacked=stacked):
                return scaled(product(a, b), self, beta, alpha)
            out = a.new_empty(shape(a, b))
            return fallback(self, a, b, beta=beta, alpha=alpha, out=out)

        return kernel

    return {
        "mm": plain("mm", stacked=False),
        "bmm": plain("bmm", stacked=True),
        "addmm": added("addmm", stacked=False),
        "baddbmm": added("baddbmm", stacked=True),
    }


_replacement = Replacement(_kernels)
