"""FOCAL++'s context encoder as the paper draws it: a stack of residual attention blocks.

A transition (s, a, s′, r) becomes tokens x [T, B, L, D]. Each block, on its pre-normed input
h = LN(x), runs the two intra-task attentions in parallel and adds them to x (FOCAL++ §3.2:
"since two attention modules operate on separate dimensions, we connect them in parallel to
generate task embedding z by addition"; the figure: "a stack of attention blocks"):

    x ← x + SA(h) + (m − 1)·h          SA: self-attention along a transition's L tokens
    x ← x + FFN(LN(x))                 m [T, B]: the batch-wise gate's scalar per transition

m = 2σ(score) ∈ (0, 2) is squeeze-and-excitation along the batch: each transition's state,
squeezed over its tokens, is scored beside the batch's mean state through a bottleneck of width
D / reduction. Every residual branch starts at zero (the gate's score, the attention's and the
feed-forward's output layers), so a block is the identity at initialisation, as the proof of
Theorem 3.3 assumes ("the identity map initialization of the residual attention module").

One bounded head ends the stack: e_b = tanh(Linear(LN(mean over tokens))) ∈ (−1, 1)^Z, and the
task vector is the mean of e over the batch weighted by the last gate's multipliers, normalised
to mean 1 (Theorem 3.3's μ = E[W(c) E(c)] with E[W] = 1): a convex combination, so z ∈ (−1, 1)^Z
(the appendix's "bounded task embeddings"). The batch-wise row is the stack with the gate only
(one token per transition: without self-attention, separate tokens would never mix), the
sequence-wise row the stack with self-attention only. Choices the paper leaves open: docs/
DECISIONS.md §4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from components.encoders.encoded import Encoded, weighted_mean
from components.encoders.short_attention import random_bits_dropout
from components.encoders.token_attention import token_attention
from components.encoders.tokenizers import ComponentTokenizer
from registry import RecipeError, register
from registry.constraints import Fraction, PositiveInt


@register("block_gate", "block_gate")
class BlockGate(nn.Module):
    """Hidden states [T, B, L, D] -> multipliers [T, B] in (0, 2), 1 at initialisation.

    The bottleneck is a tanh (as in the FOCAL authors' draft), not SE's ReLU: at the CPU scale
    it is 2 units wide, and a ReLU unit that dies there would freeze the gate.

    Args:
        width: D, the block's width (set by the encoder).
        reduction: the bottleneck is D / reduction wide (paper: 16, so 8 at D = 128).
    """

    seed_batching = True  # components/seeds: linear layers, a mean over each task's own batch

    def __init__(self, *, width: int, reduction: PositiveInt = 16):
        super().__init__()
        hidden = max(1, width // reduction)
        self.score = nn.Sequential(nn.Linear(2 * width, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        nn.init.zeros_(self.score[-1].weight)  # m = 2σ(0) = 1: the identity at initialisation
        nn.init.zeros_(self.score[-1].bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        squeezed = hidden.mean(2)  # [T, B, D]: each transition's state over its tokens
        batch = squeezed.mean(1, keepdim=True).expand_as(squeezed)  # the task's batch, any order
        score = self.score(torch.cat([squeezed, batch], -1)).squeeze(-1)  # [T, B]
        return 2.0 * torch.sigmoid(score)


class AttentionBlock(nn.Module):
    """One pre-norm residual block: x + SA(h) + (m − 1)·h, then x + FFN(LN(x)); h = LN(x).

    Args:
        width: D.
        heads: attention heads (self_attention only).
        self_attention: run the sequence-wise self-attention branch.
        gate: the batch-wise gate class, or None.
        feedforward: the feed-forward layer's width as a multiple of D.
        dropout: on each residual branch's output (the blocks' only random draws).
    """

    seed_batching = True  # components/seeds: linear layers and norms per seed

    def __init__(
        self,
        *,
        width: int,
        heads: int,
        self_attention: bool,
        gate: Callable[..., nn.Module] | None,
        feedforward: int,
        dropout: float,
    ):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width) if self_attention else None
        self.attended = nn.Linear(width, width) if self_attention else None
        self.gate = gate(width=width) if gate is not None else None
        self.ffn_norm = nn.LayerNorm(width)
        self.ffn_in = nn.Linear(width, feedforward * width)
        self.ffn_out = nn.Linear(feedforward * width, width)
        for layer in (self.attended, self.ffn_out):  # residual branches start at zero
            if layer is not None:
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)

    def self_attention(self, h: torch.Tensor) -> torch.Tensor:
        """[T, B, L, D] -> [T, B, L, D]: each transition's tokens attend to each other."""
        return self.attended(token_attention(*self.qkv(h).chunk(3, -1), heads=self.heads))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [T, B, L, D] -> (x, the gate's multipliers [T, B] or None)."""
        h = self.norm(x)
        m = self.gate(h) if self.gate is not None else None
        gated = (m - 1.0)[..., None, None] * h if m is not None else None
        if self.qkv is None:
            branch = gated
        else:
            attended = self.self_attention(h)
            branch = attended if gated is None else attended + gated
        x = x + random_bits_dropout(branch, self.dropout, self.training)
        ffn = self.ffn_out(F.relu(self.ffn_in(self.ffn_norm(x))))
        return x + random_bits_dropout(ffn, self.dropout, self.training), m


@register("context_encoder", "attention_blocks")
class AttentionBlockEncoder(nn.Module):
    """Context [T, B, F] -> tokens -> N attention blocks -> bounded head -> Encoded.

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        tokenizer: a tokenizer class (gin: `@component_tokens`, `@transition_token`).
        width: D, the blocks' width (paper: transformer hidden 128).
        heads: attention heads (paper: 8).
        blocks: N (paper: 3).
        dropout: dropout on the residual branches (paper: 0.1).
        self_attention: the sequence-wise branch in every block.
        gate: the batch-wise gate class (gin: `@block_gate`), or None.
        feedforward: the feed-forward width as a multiple of D.
    """

    seed_batching = True  # components/seeds: its tokenizer, blocks and head per seed

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        tokenizer: Callable[..., nn.Module] = ComponentTokenizer,
        width: PositiveInt = 128,
        heads: PositiveInt = 8,
        blocks: PositiveInt = 3,
        dropout: Fraction = 0.1,
        self_attention: bool = True,
        gate: Callable[..., nn.Module] | None = BlockGate,
        feedforward: PositiveInt = 2,
    ):
        super().__init__()
        if not self_attention and gate is None:
            raise RecipeError(
                "attention_blocks with self_attention = False and gate = None has no attention: "
                "keep one (the batch-wise row: gate only; the sequence-wise row: self-attention "
                "only), or use FOCAL's @context_encoder"
            )
        if self_attention and width % heads:
            raise RecipeError(
                f"attention_blocks.width = {width} cannot be split among {heads} heads: choose "
                "a width that is a multiple of attention_blocks.heads"
            )
        self.tokenizer = tokenizer(sizes=sizes, d_model=width)
        self.blocks = nn.ModuleList(
            AttentionBlock(
                width=width,
                heads=heads,
                self_attention=self_attention,
                gate=gate,
                feedforward=feedforward,
                dropout=dropout,
            )
            for _ in range(blocks)
        )
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, latent_dim), nn.Tanh())

    def forward(self, context: torch.Tensor) -> Encoded:
        x = self.tokenizer(context)  # [T, B, L, D]
        multipliers = None
        for block in self.blocks:
            x, m = block(x)
            multipliers = m if m is not None else multipliers
        e = self.head(x.mean(2))  # [T, B, Z] in (−1, 1)
        if multipliers is None:
            w = torch.ones(e.shape[:2], device=e.device, dtype=e.dtype)
        else:  # Theorem 3.3's W(c), E[W] = 1 over the batch: z a convex combination of e
            w = multipliers / multipliers.mean(1, keepdim=True)
        return Encoded(e, w, weighted_mean(e, w))
