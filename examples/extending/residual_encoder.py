"""An example transition encoder living outside the package: a residual MLP.

Registered as `residual_mlp_encoder` (kind `transition_encoder`); a recipe selects it with
`context_encoder.transition = @residual_mlp_encoder`. See docs/EXTENDING.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from registry import register


@register("transition_encoder", "residual_mlp_encoder")
class ResidualMLPEncoder(nn.Module):
    """Each transition [T, B, F] -> embedding [T, B, Z] through pre-norm residual blocks.

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        width: hidden width.
        blocks: residual blocks.
    """

    def __init__(self, *, sizes: Sequence[int], latent_dim: int, width: int = 64, blocks: int = 2):
        super().__init__()
        self.embed = nn.Linear(sum(sizes), width)
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(width), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)
            )
            for _ in range(blocks)
        )
        self.head = nn.Sequential(nn.Linear(width, latent_dim), nn.Tanh())

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        h = self.embed(context)
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)
