"""Turn a transition vector into a sequence of tokens for the sequence-wise attention.

The tokenizers map [..., F] to [..., L, D]: `scalar_tokens` makes one token per number
(L = F), `component_tokens` one per component s, a, s′, r (L = number of components),
`transition_token` one for the whole transition (L = 1, for blocks without self-attention).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from components.seeds import add_per_seed, mul_per_seed
from registry import register
from registry.constraints import PositiveInt


@register("tokenizer", "scalar_tokens")
class ScalarTokenizer(nn.Module):
    """Token i = x_i · w_i + p_i: a learned direction and a learned position per scalar.

    Args:
        sizes: sizes of the transition's components (only their sum F matters here).
        d_model: token width D.
    """

    seed_batching = True  # components/seeds: its direction and position per seed

    def __init__(self, *, sizes: Sequence[int], d_model: PositiveInt = 128):
        super().__init__()
        n = sum(sizes)
        self.direction = nn.Parameter(torch.randn(n, d_model) / d_model**0.5)
        self.position = nn.Parameter(torch.randn(n, d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return add_per_seed(mul_per_seed(x.unsqueeze(-1), self.direction, 2), self.position, 2)


@register("tokenizer", "component_tokens")
class ComponentTokenizer(nn.Module):
    """Token c = Linear_c(component c) + type embedding c, for components (s, a, s′, r).

    Args:
        sizes: sizes of the components in the order they are concatenated.
        d_model: token width D.
    """

    seed_batching = True  # components/seeds: its projections and type embeddings per seed

    def __init__(self, *, sizes: Sequence[int], d_model: PositiveInt = 128):
        super().__init__()
        self.sizes = list(sizes)
        self.project = nn.ModuleList(nn.Linear(size, d_model) for size in self.sizes)
        self.kind = nn.Parameter(torch.randn(len(self.sizes), d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, self.sizes, dim=-1)
        tokens = torch.stack([proj(p) for proj, p in zip(self.project, parts, strict=True)], -2)
        return add_per_seed(tokens, self.kind, 2)  # [..., L, D]


@register("tokenizer", "transition_token")
class TransitionTokenizer(nn.Module):
    """The whole transition as one token: Linear(s ‖ a ‖ s′ ‖ r), L = 1.

    For blocks without self-attention (the batch-wise row): separate tokens would then never
    mix, while one token sees every component, as FOCAL's MLP does.

    Args:
        sizes: sizes of the transition's components (only their sum F matters here).
        d_model: token width D.
    """

    seed_batching = True  # components/seeds: a linear layer per seed

    def __init__(self, *, sizes: Sequence[int], d_model: PositiveInt = 128):
        super().__init__()
        self.project = nn.Linear(sum(sizes), d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(x).unsqueeze(-2)  # [..., 1, D]
