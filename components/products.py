"""Matrix products as FMA chains: the products of the `fma` numerics (components/numerics.py).

Under the `portable` numerics every matrix product runs MKL's COMPATIBLE branch: the same on
every x86 CPU, but several times slower than the CPU's own kernels at a long build's sizes. Here
each fp32 product is defined by its arithmetic instead, so that any kernel computing that
arithmetic gives the same bits:

    C[i, j] = part_0 + part_1 + ... (left to right, each sum rounded to fp32)
    part_b  = fma(A[i, k_last], B[k_last, j], ... fma(A[i, k_0], B[k_0, j], 0))

the contraction cut into blocks of `BLOCK` terms from the start, each block one sequential chain
of fused multiply-adds from zero (IEEE 754: one rounding per term), the blocks' sums added in
order. oneDNN's AVX2 matrix kernel (`ONEDNN_MAX_CPU_ISA=AVX2`, pinned with the numerics)
computes a block of this size exactly so for operands in row-major order and at least two rows
and two columns: an output element is one vector lane of a register accumulated term by term.
Fewer than two rows or columns take other kernels, so such operands are padded with zeros; a
weight of a row stride other than its width does too, so blocks are copied contiguous.

That it holds is not taken on trust: tests/components/test_products.py compares these products
with the chain computed exactly (each fused multiply-add rounded once, correctly), on the CPU
that runs the suite. Products that are not fp32, and batched products of more than `MAX_BATCH`
matrices (attention's many small ones, where per-matrix calls cost more than they save), keep
MKL's portable branch; so do the products inside fused kernels (scaled-dot-product attention).

`install()` puts these kernels in place of ATen's CPU `mm`, `addmm`, `bmm` and `baddbmm` for the
rest of the process — what `nn.Linear`, `torch.matmul`, `@` and their gradients all call.
"""

from __future__ import annotations

import warnings

import torch

BLOCK = 256  # terms per chain; oneDNN keeps one chain up to 1,024 terms on the CPUs measured
MAX_BATCH = 8  # batched products of more matrices keep MKL's portable branch
_LIBRARY: torch.library.Library | None = None


def chain_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a [M, K] @ b [K, N] in fp32 as blocks of FMA chains (the module's definition)."""
    m, k = a.shape
    n = b.shape[1]
    if m < 2:  # one row takes a matrix-vector kernel of another order: pad to two
        a = torch.cat([a, a.new_zeros(2 - m, k)])
    weight = b.t()  # [N, K], as oneDNN's linear reads it
    if n < 2:
        weight = torch.cat([weight, weight.new_zeros(2 - n, k)])
    out = None
    for start in range(0, k, BLOCK):
        part = torch.ops.mkldnn._linear_pointwise(
            a[:, start : start + BLOCK].contiguous(),
            weight[:, start : start + BLOCK].contiguous(),
            None,
            "none",
            [],
            "",
        )
        out = part if out is None else out.add_(part)
    return out if (m >= 2 and n >= 2) else out[:m, :n].contiguous()


def _chained(a: torch.Tensor, b: torch.Tensor, *others: torch.Tensor) -> bool:
    """Whether a product of these operands goes by chains: fp32, dense, nothing empty."""
    dense = all(t.dtype == torch.float32 and t.layout == torch.strided for t in (a, b, *others))
    return dense and a.numel() > 0 and b.numel() > 0


def _empty(a: torch.Tensor, *shape: int) -> torch.Tensor:
    return a.new_empty(shape)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if not _chained(a, b):
        return torch.mm(a, b, out=_empty(a, a.shape[0], b.shape[1]))  # .out: ATen's own kernel
    return chain_mm(a, b)


def addmm(bias, a, b, *, beta=1, alpha=1) -> torch.Tensor:
    if beta != 1 or alpha != 1 or not _chained(a, b, bias):
        out = _empty(a, a.shape[0], b.shape[1])
        return torch.addmm(bias, a, b, beta=beta, alpha=alpha, out=out)
    return chain_mm(a, b) + bias  # the bias added once, after the product (as oneDNN's own)


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if not _chained(a, b) or a.shape[0] > MAX_BATCH:
        return torch.bmm(a, b, out=_empty(a, a.shape[0], a.shape[1], b.shape[2]))
    return torch.stack([chain_mm(x, y) for x, y in zip(a, b, strict=True)])


def baddbmm(bias, a, b, *, beta=1, alpha=1) -> torch.Tensor:
    if beta != 1 or alpha != 1 or not _chained(a, b, bias) or a.shape[0] > MAX_BATCH:
        out = _empty(a, a.shape[0], a.shape[1], b.shape[2])
        return torch.baddbmm(bias, a, b, beta=beta, alpha=alpha, out=out)
    return bmm(a, b) + bias


def install() -> None:
    """These kernels in place of ATen's CPU products, for the rest of this process (idempotent).
    Only `components.numerics.require('fma')` calls it: the numerics must be pinned first."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "overriding a previously registered kernel": meant
        warnings.simplefilter("ignore")
        for name, kernel in (("mm", mm), ("addmm", addmm), ("bmm", bmm), ("baddbmm", baddbmm)):
            library.impl(name, kernel, "CPU")
    _LIBRARY = library


def installed() -> bool:
    return _LIBRARY is not None
