"""Multi-head self-attention over a transition's few tokens, fast on a CPU.

FOCAL++'s sequence-wise attention runs over a transition's L tokens (L = 4 for s, a, s′, r)
for every transition of the meta-batch: thousands of sequences of a handful of tokens.
`F.scaled_dot_product_attention` computes them, on a CPU, as one tiny matrix product per
(transition, head), [L, d] × [d, L], and a softmax along the last dimension of size L; both
are dominated by per-item overhead (at the CPU scale, 1,024 transitions × 4 heads: 0.3 ms per
product and 0.7 ms for a softmax over 65k numbers, a third of FOCAL++'s step).

Here each transition's heads are handled together instead. With M the head mask [H, D]
(M[h, c] = 1 when feature c belongs to head h) and q̃_(i,h) = q_i ⊙ M_h · d^−½:

    s[j, (i, h)] = k_j · q̃_(i,h)                      one [L, D] × [D, L·H] product per transition
    p = softmax over j                                 a softmax along a non-last dimension
    o_i = Σ_(j,h) p[j, (i, h)] · (v_j ⊙ M_h)           one [L, L·H] × [L·H, D] product

The products do H times the arithmetic of the per-head form, but 1/H as many of them, each
large enough for the CPU's kernel; the backward pass is written out the same way. The result
equals scaled-dot-product attention up to float rounding (the sums run in another order):
tests/components/encoders/test_token_attention.py. Other devices, and sequences longer than
`SHORT` tokens (where the per-head products are large enough), use PyTorch's kernel.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

SHORT = 8  # up to this many tokens, the joint-head form (longer: PyTorch's kernel)


def head_mask(heads: int, width: int, like: torch.Tensor) -> torch.Tensor:
    """M [H, D]: 1 where feature c belongs to head h (heads of width D / H, in order), in
    `like`'s dtype and device."""
    return _head_mask(heads, width, like.device, like.dtype)


@functools.cache
def _head_mask(heads: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    # built once per shape: every forward of every block reads it (never written to); a
    # normal tensor even when first asked for under inference mode, so training can save it
    with torch.inference_mode(False):
        owner = torch.arange(width, device=device) // (width // heads)
        return (owner == torch.arange(heads, device=device)[:, None]).to(dtype)


class _JointHeads(torch.autograd.Function):
    """q, k, v [N, L, D] -> o [N, L, D]; saves q̃, k, v, p for the backward pass."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale):
        n, length, width = q.shape
        heads = mask.shape[0]
        q_heads = (q.unsqueeze(-2) * (mask * scale)).view(n, length * heads, width)  # q̃
        p = torch.softmax(torch.bmm(k, q_heads.transpose(1, 2)), 1)  # [N, Lj, (Li, H)]
        o = torch.bmm(_by_query(p, heads), _spread(v, mask))  # [N, Li, D]
        ctx.save_for_backward(q_heads, k, v, p, mask)
        ctx.scale = scale
        return o

    @staticmethod
    def backward(ctx, grad):
        q_heads, k, v, p, mask = ctx.saved_tensors
        heads = mask.shape[0]
        grad_heads = _spread(grad, mask)  # [N, (Li, H), D]: the output's gradient per head
        grad_v = torch.bmm(p, grad_heads)  # Σ_i p[j, i, h] g_i, head h's features
        grad_p = torch.bmm(v, grad_heads.transpose(1, 2))  # [N, Lj, (Li, H)]
        grad_s = torch._softmax_backward_data(grad_p, p, 1, p.dtype)
        grad_k = torch.bmm(grad_s, q_heads)  # Σ_i s′[j, i, h] q̃_(i,h)
        grad_q = torch.bmm(_by_query(grad_s, heads), _spread(k, mask * ctx.scale))
        return grad_q, grad_k, grad_v, None, None


def _spread(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """[N, L, D] -> [N, (L, H), D]: each token's features of head h alone, in row (l, h)."""
    n, length, width = x.shape
    return (x.unsqueeze(-2) * mask).view(n, length * mask.shape[0], width)


def _by_query(p: torch.Tensor, heads: int) -> torch.Tensor:
    """[N, Lj, (Li, H)] -> [N, Li, (Lj, H)]: the weights each query token gives the keys."""
    n, length = p.shape[:2]
    return p.view(n, length, length, heads).transpose(1, 2).reshape(n, length, length * heads)


def token_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int) -> torch.Tensor:
    """Self-attention of q, k, v [..., L, D] (heads of width D / H, in order) -> [..., L, D]:
    softmax(q_h k_hᵀ / √d) v_h per head, concatenated."""
    *lead, length, width = q.shape
    if q.device.type != "cpu" or length > SHORT:
        split = [t.unflatten(-1, (heads, -1)).transpose(-3, -2) for t in (q, k, v)]
        return F.scaled_dot_product_attention(*split).transpose(-3, -2).flatten(-2)
    scale = (width // heads) ** -0.5
    flat = [t.reshape(-1, length, width) for t in (q, k, v)]
    out = _JointHeads.apply(*flat, head_mask(heads, width, q), scale)
    return out.view(*lead, length, width)
