"""A transformer encoder layer's forward for many short sequences: a transition's tokens.

`nn.TransformerEncoderLayer` computes what FOCAL++'s sequence-wise attention needs, but its
training path is built for long sequences: it packs q, k, v with copying transposes, runs the
attention of each (sequence, head) pair as a tiny batched matrix product, zero-fills gradient
buffers, and draws dropout masks with `bernoulli_` (9 ns per element on a CPU: at the paper's
sizes, a third of the whole FOCAL++ step). Here the same layer's parameters are applied with

- q, k, v as views of one projection (no copies), the attention weights by
  `scaled_dot_product_attention` where no dropout acts on them, else by the same matrix
  products and softmax as PyTorch's math path;
- dropout masks cut from 64-bit random words, four 16-bit draws each (`random_bits_dropout`):
  the drop probability is p rounded to a multiple of 1/65536 (0.1 → 0.1000061).

In eval mode, or with dropout 0, the outputs and gradients equal the layer's own within fp32
rounding (tests/components/encoders/test_short_attention.py); with dropout they follow the same
distribution from other random draws.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.seeds import seed_linear
from components.seeds.streams import active

STEPS = 65536  # a 16-bit draw: p is rounded to a multiple of 1/65536


def _apply_mask(x: torch.Tensor, keep: torch.Tensor, scale: float) -> torch.Tensor:
    """x where keep, else 0, times scale. A product with the mask as 0/1 in x's dtype: a
    `torch.where` on a boolean mask, or a product with it, runs element by element on a CPU
    (about 5× slower), while a uint8 → dtype cast and two products are vectorised. The
    values are where's (×1 is exact), up to the sign of a dropped zero."""
    return (x * keep.view(torch.uint8).to(x.dtype)).mul_(scale)


class _MaskedScale(torch.autograd.Function):
    """x where keep, else 0, times scale; only the boolean mask is kept for the backward pass
    (a float mask would take four times its memory)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, keep: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return _apply_mask(x, keep, scale)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (keep,) = ctx.saved_tensors
        return _apply_mask(grad, keep, ctx.scale), None, None


def _keep_mask(x: torch.Tensor, drop: int) -> torch.Tensor:
    """True with probability 1 − drop / 65536 per element: four 16-bit draws per 64-bit word
    (in a seed-batched step, each seed's rows from its own stream, as its single run draws)."""
    streams = active()
    generators = [None] if streams is None else streams.generators
    n = x.numel() // len(generators)
    bits = [
        torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None, generator=g)
        .view(torch.int16)[:n]
        for g in generators
    ]  # fmt: skip
    mask = bits[0] if len(bits) == 1 else torch.cat(bits)
    return mask.view(x.shape) >= drop - STEPS // 2


def random_bits_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Dropout whose mask comes from four 16-bit draws per 64-bit random word (CPU); on other
    devices, `F.dropout`. Both draw from torch's generator, so a seeded run repeats itself."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    drop = round(p * STEPS)
    if drop >= STEPS:
        return torch.zeros_like(x)
    return _MaskedScale.apply(x, _keep_mask(x, drop), STEPS / (STEPS - drop))


class _ReluDropout(torch.autograd.Function):
    """dropout(relu(h)) keeping only its output: where it is positive, h was positive and the
    element was kept, and everywhere else the gradient is 0, so the output alone gives the
    backward pass (the next linear layer keeps the same tensor: no extra memory)."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, keep: torch.Tensor, scale: float) -> torch.Tensor:
        out = _apply_mask(h, keep, scale).relu_()
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (out,) = ctx.saved_tensors
        # ReLU's own backward kernel (vectorised): grad where out > 0, else 0
        return torch.ops.aten.threshold_backward(grad, out, 0).mul_(ctx.scale), None, None


def relu_dropout(h: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """`random_bits_dropout(F.relu(h), p, training)`, with the same random draws, keeping
    half the activations for the backward pass."""
    drop = round(p * STEPS)
    if not training or p == 0.0 or h.device.type != "cpu" or drop >= STEPS:
        return random_bits_dropout(F.relu(h), p, training)
    return _ReluDropout.apply(h, _keep_mask(h, drop), STEPS / (STEPS - drop))


def self_attention(layer: nn.TransformerEncoderLayer, x: torch.Tensor) -> torch.Tensor:
    """The layer's multi-head self-attention of x [N, L, D] (batch first), dropout on the
    attention weights as the layer's."""
    attn = layer.self_attn
    n, length, d = x.shape
    heads = attn.num_heads
    qkv = seed_linear(x, attn.in_proj_weight, attn.in_proj_bias)  # K seeds' where stacked
    # [N, H, L, d/H] views; their gradients are joined by one concatenation
    q, k, v = (t.view(n, length, heads, d // heads).transpose(1, 2) for t in qkv.split(d, -1))
    p = attn.dropout if layer.training else 0.0
    if p == 0.0:
        out = F.scaled_dot_product_attention(q, k, v)
    else:  # PyTorch's math path, with the cheaper dropout masks
        weights = torch.softmax(q @ k.transpose(-2, -1) * (d // heads) ** -0.5, dim=-1)
        out = random_bits_dropout(weights, p, True) @ v
    out = out.transpose(1, 2).reshape(n, length, d)
    return seed_linear(out, attn.out_proj.weight, attn.out_proj.bias)


def encoder_layer(layer: nn.TransformerEncoderLayer, x: torch.Tensor) -> torch.Tensor:
    """`layer(x)` for a post-norm ReLU layer (PyTorch's defaults, as the encoder builds it)."""
    training = layer.training
    x = layer.norm1(x + random_bits_dropout(self_attention(layer, x), layer.dropout1.p, training))
    hidden = relu_dropout(layer.linear1(x), layer.dropout.p, training)
    return layer.norm2(x + random_bits_dropout(layer.linear2(hidden), layer.dropout2.p, training))


def check_layer(layer: nn.TransformerEncoderLayer) -> None:
    """`encoder_layer` computes post-norm layers with ReLU, batch first: refuse others."""
    if layer.norm_first or layer.activation is not F.relu or not layer.self_attn.batch_first:
        raise ValueError(
            "encoder_layer computes batch-first post-norm ReLU layers (norm_first=False, "
            "activation='relu', batch_first=True)"
        )
