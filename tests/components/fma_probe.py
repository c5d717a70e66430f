"""Run by tests/components/test_products.py in a process of `fma` numerics: every product the
installed kernels compute, against the FMA chains computed exactly here; prints one JSON line
{case: number of elements that differ}."""

from __future__ import annotations

import json
import sys

from components import numerics

numerics.pin(numerics.FMA)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from components import products  # noqa: E402


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fp32 fma(a, b, c), correctly rounded: a·b is exact in float64; the sum is rounded to
    odd (float64 sum, its exact error by TwoSum, the last bit set where inexact), which a
    float64 → float32 rounding then rounds correctly (53 ≥ 2·24 + 2 bits)."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    v = s - p
    err = (p - (s - v)) + (c - v)
    even = (s.view(np.int64) & 1) == 0
    s = np.where((err != 0) & even, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def chain(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """a [M, K] @ b [K, N] as components/products.py defines it: blocks of BLOCK terms, each
    a sequential FMA chain from zero, the blocks' sums added left to right in fp32."""
    a, b = a.detach().numpy(), b.detach().numpy()
    total = None
    for start in range(0, a.shape[1], products.BLOCK):
        c = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for t in range(start, min(a.shape[1], start + products.BLOCK)):
            c = fma32(a[:, t : t + 1], b[t : t + 1, :], c)
        total = c if total is None else total + c
    return total


def differ(got: torch.Tensor, want: np.ndarray) -> int:
    got = got.detach().numpy()
    return int(got.size) if got.shape != want.shape else int((got != want).sum())


def main() -> None:
    numerics.require(numerics.FMA)
    g = torch.Generator().manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)

    def r(*shape):
        return torch.randn(*shape, generator=g)

    found = {}
    for m, k, n in [(7, 5, 3), (1, 40, 9), (9, 40, 1), (1, 1, 1), (2, 256, 2), (33, 257, 17),
                    (64, 600, 48), (300, 283, 256)]:  # fmt: skip
        a, b = r(m, k), r(k, n)
        found[f"mm {m}x{k}x{n}"] = differ(torch.mm(a, b), chain(a, b))
    a, b = r(40, 300).t(), r(70, 40).t()  # transposed operands (column-major strides)
    found["mm of transposed operands"] = differ(a @ b, chain(a, b))
    a, b = r(30, 520)[:, 3:500], r(600, 20)[50:547]  # row strides other than the width
    found["mm of sliced operands"] = differ(a @ b, chain(a, b))
    x, w, bias = r(50, 300), r(40, 300), r(40)
    found["addmm"] = differ(torch.addmm(bias, x, w.t()), chain(x, w.t()) + bias.numpy())

    # a layer and its gradients, as autograd calls the products
    x, w, bias = r(300, 37).requires_grad_(), r(20, 37).requires_grad_(), r(20).requires_grad_()
    y = F.linear(x, w, bias)
    grad = r(300, 20)
    y.backward(grad)
    found["linear"] = differ(y, chain(x, w.t()) + bias.detach().numpy())
    found["linear: input gradient"] = differ(x.grad, chain(grad, w))
    found["linear: weight gradient"] = differ(w.grad, chain(grad.t(), x))

    a, b, c = r(3, 20, 300), r(3, 300, 5), r(3, 1, 5)
    want = np.stack([chain(a[i], b[i]) for i in range(3)])
    found["bmm"] = differ(torch.bmm(a, b), want)
    found["baddbmm"] = differ(torch.baddbmm(c, a, b), want + c.numpy())
    found["matmul 3-d"] = differ(a @ b, want)
    a, b = r(products.MAX_BATCH + 1, 6, 5), r(products.MAX_BATCH + 1, 5, 4)
    mkl = torch.bmm(a, b, out=torch.empty(products.MAX_BATCH + 1, 6, 4))
    found["bmm of many matrices: MKL's"] = int((torch.bmm(a, b) != mkl).sum())
    a, b = r(300, 283), r(283, 256)  # MKL's portable branch: other roundings (the check can fail)
    found["MKL's portable product, elements equal to the chain"] = int(
        (torch.mm(a, b, out=torch.empty(300, 256)).numpy() == chain(a, b)).sum()
    )
    found["mode"] = 0 if numerics.mode() == numerics.FMA else 1
    print(json.dumps(found))


if __name__ == "__main__":
    main()
