"""The first edition's sequence-wise self-attention (the paper's is inside the attention blocks,
components/encoders/attention_blocks.py): a transformer along the elements of ONE transition.

The tokens of a transition (its numbers, or its s, a, s′, r) attend to each other, so the encoder
can model correlations inside (s, a, s′, r) that a per-transition MLP mixes only linearly. Each
transition is a sequence of L ≥ 2 tokens, never a single token (DECISIONS §4: a one-token sequence
would make attention a linear map). The blocks are PyTorch's `TransformerEncoderLayer`s (their
parameters, their checkpoint keys), computed by `short_attention.encoder_layer`, which is
written for many short sequences.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from einops import rearrange
from torch import nn
from torch.utils.checkpoint import checkpoint

from components.encoders.short_attention import check_layer, encoder_layer
from components.encoders.tokenizers import ComponentTokenizer
from components.seeds.streams import active
from registry import RecipeError, register
from registry.constraints import Fraction, PositiveInt


@register("transition_encoder", "sequence_attention")
class SequenceAttentionEncoder(nn.Module):
    """Transitions [T, B, F] -> tokens [T·B, L, D] -> transformer -> mean over L -> [T, B, Z].

    Args:
        sizes: component sizes of a transition, e.g. (obs, act, obs, 1) (set by the algorithm).
        latent_dim: Z.
        tokenizer: a tokenizer class (gin: `@scalar_tokens` or `@component_tokens`).
        d_model: token width (paper: 128).
        heads: attention heads (paper: 8).
        blocks: transformer blocks (paper: 3).
        dropout: dropout in the blocks (paper: 0.1).
        recompute: keep only each block's input for the backward pass and compute the block
            again there (the same random draws, the same numbers): about a third more of the
            encoder's work for a sixth of its activation memory.
    """

    seed_batching = True  # components/seeds: every transition's tokens on their own

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        tokenizer: Callable[..., nn.Module] = ComponentTokenizer,
        d_model: PositiveInt = 128,
        heads: PositiveInt = 8,
        blocks: PositiveInt = 3,
        dropout: Fraction = 0.1,
        recompute: bool = False,
    ):
        super().__init__()
        self.tokenizer = tokenizer(sizes=sizes, d_model=d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=2 * d_model, dropout=dropout, batch_first=True
        )
        check_layer(layer)
        self.blocks = nn.TransformerEncoder(layer, blocks, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, latent_dim), nn.Tanh())
        self.recompute = recompute

    def tokens(self, context: torch.Tensor) -> torch.Tensor:
        """Per-token outputs [T, B, L, D] (for analysis and tests)."""
        t = context.shape[0]
        x = rearrange(self.tokenizer(context), "t b l d -> (t b) l d")
        recompute = self.recompute and torch.is_grad_enabled()
        if recompute and active() is not None and self.blocks.layers[0].dropout.p > 0:
            raise RecipeError(
                "sequence_attention.recompute = True with dropout replays a block's random "
                "draws from torch's generator, not from each seed's stream: with several seeds "
                "in one process set sequence_attention.recompute = False (or dropout = 0)"
            )
        for layer in self.blocks.layers:
            if recompute:  # the block's random state is kept and replayed in the backward pass
                x = checkpoint(encoder_layer, layer, x, use_reentrant=False)
            else:
                x = encoder_layer(layer, x)
        return rearrange(x, "(t b) l d -> t b l d", t=t)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        return self.head(self.tokens(context).mean(-2))  # [T, B, Z]
