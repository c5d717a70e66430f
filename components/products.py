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

Threads. OpenBLAS's own threads would change the bits (its threaded driver blocks the work
otherwise than its one-thread driver), so it keeps one. A large product may instead be cut
here into bands of rows, each computed by one-thread OpenBLAS on a thread of this process
(numpy lets go of the interpreter while it multiplies). The cuts fall on multiples of 12 rows:
that kernel set tiles the rows of a product (its N, numpy's rows) in twelves from the first,
and sums every element over the columns of A in the same order whatever the band, so a band
is, bit for bit, the same rows of the uncut product (tests/components/test_products.py checks
it on thousands of shapes and layouts). Bands are therefore a matter of speed alone: the same
bits with one thread or eight. `use_threads` (or $FOCALPP_PRODUCT_THREADS) sets how many; a
dataset build gives a lone block all the cores it may use (components/data/blocks.py).
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

from components.cpu_kernels import Replacement
from registry.errors import FocalppError

REPLACED = ("mm", "addmm", "bmm", "baddbmm")
THREADS_ENV = "FOCALPP_PRODUCT_THREADS"  # threads a process's products may use (default 1)
MIN_WORK_ENV = "FOCALPP_PRODUCT_MIN_WORK"  # multiply-adds below which a product is not cut
BAND = 12  # rows: how OpenBLAS's Haswell sgemm tiles a product's rows (3 × its unroll of 4)
MIN_WORK = 1 << 26  # ~1.5 ms of one core's work; smaller products gained nothing in bands (docs)
# OpenBLAS restarts its tiling of the rows every GEMM_R rows (a constant of its build, at least
# 25,872 for x86-64 buffers). Bands were exact across that too (checked to 220,000 rows), but
# taller products stay whole: nothing here multiplies them, and no test covers them
MAX_ROWS = 16_384


class ProductsError(FocalppError, ValueError):
    """A thread count or threshold for the products that is not a whole number in range."""


def _whole(name: str, text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise ProductsError(f"{name} = {text!r}: expected a whole number ≥ {low}")
    return value


class _Bands:
    """How many threads the products use, and the pool that runs the bands beyond the first."""

    def __init__(self):
        self.threads, self.min_work = 1, MIN_WORK
        self._pool: ThreadPoolExecutor | None = None

    def read_environment(self) -> None:
        """$FOCALPP_PRODUCT_THREADS and $FOCALPP_PRODUCT_MIN_WORK, where set."""
        if THREADS_ENV in os.environ:
            self.set(threads_from_environment())
        if MIN_WORK_ENV in os.environ:
            self.min_work = _whole(f"${MIN_WORK_ENV}", os.environ[MIN_WORK_ENV], 0)

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="products")
        return self._pool

    def set(self, threads: int) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ProductsError(f"threads = {threads!r}: expected a whole number ≥ 1")
        if threads != self.threads and self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.threads = threads

    def forget_pool(self) -> None:
        """In a forked child: the parent's pool threads do not exist here."""
        self._pool = None


_bands = _Bands()
os.register_at_fork(after_in_child=_bands.forget_pool)


def threads_from_environment() -> int:
    """$FOCALPP_PRODUCT_THREADS (1 where unset), checked."""
    return _whole(f"${THREADS_ENV}", os.environ.get(THREADS_ENV, "1"), 1)


def check_environment() -> None:
    """Raise `ProductsError` where $FOCALPP_PRODUCT_THREADS or $FOCALPP_PRODUCT_MIN_WORK is set
    to anything but a whole number in range (before a process starts others that read them)."""
    threads_from_environment()
    _whole(f"${MIN_WORK_ENV}", os.environ.get(MIN_WORK_ENV, "0"), 0)


def threads() -> int:
    """How many threads this process's float32 products may use."""
    return _bands.threads


def use_threads(n: int, *, min_work: int | None = None) -> None:
    """Let this process's float32 products use `n` threads (1: none beside the caller's), for
    products of at least `min_work` multiply-adds (default `MIN_WORK`, or where given
    $FOCALPP_PRODUCT_MIN_WORK). The bits do not change with either (module docstring)."""
    _bands.set(n)
    if min_work is not None:
        if isinstance(min_work, bool) or not isinstance(min_work, int) or min_work < 0:
            raise ProductsError(f"min_work = {min_work!r}: expected a whole number ≥ 0")
        _bands.min_work = min_work


def bands(rows: int, threads: int) -> list[tuple[int, int]]:
    """[start, end) of up to `threads` bands of `rows` rows, cut at multiples of `BAND`."""
    tiles = rows // BAND
    cuts = sorted({BAND * (tiles * i // threads) for i in range(1, threads)} - {0})
    edges = [0, *cuts, rows]
    return list(itertools.pairwise(edges))


def installed() -> bool:
    """Whether this process computes float32 products with numpy's OpenBLAS."""
    return _replacement.installed


def install() -> None:
    """Replace the CPU kernels of the products in `REPLACED` (idempotent), with the threads
    this process's environment gives them."""
    if not _replacement.installed:
        _bands.read_environment()
    _replacement.install()


def _kernels():
    import numpy as np
    import torch

    aten = torch.ops.aten

    def product(a, b):
        """a @ b (matrices or stacks of them) by OpenBLAS, in a tensor of its own: in bands of
        rows on the product threads where it is worth it (the same bits either way)."""
        x, y = a.numpy(force=True), b.numpy(force=True)
        rows, columns = x.shape[-2], y.shape[-1]
        if (
            _bands.threads == 1
            or not 2 * BAND <= rows <= MAX_ROWS
            or columns < 2  # numpy takes a matrix-vector routine here: keep it whole
            or x.size * columns < _bands.min_work  # its multiply-adds, every matrix of a stack
            or np.may_share_memory(x, y)  # numpy may take a symmetric routine (x @ x.T)
        ):
            return torch.from_numpy(np.matmul(x, y))
        out = np.empty((*x.shape[:-1], columns), dtype=np.float32)
        (first, *others) = bands(rows, _bands.threads)
        pool = _bands.pool()
        pending = [
            pool.submit(np.matmul, x[..., s:e, :], y, out=out[..., s:e, :]) for s, e in others
        ]
        np.matmul(x[..., first[0] : first[1], :], y, out=out[..., first[0] : first[1], :])
        for band in pending:
            band.result()
        return torch.from_numpy(out)

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
