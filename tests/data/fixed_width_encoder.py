"""A plugin encoder with a hard-wired input width (for the context-mismatch test)."""

from __future__ import annotations

from torch import nn

from registry import register


@register("transition_encoder", "fixed_width_encoder")
class FixedWidthEncoder(nn.Module):
    """Reads 7-wide transitions whatever the context holds."""

    def __init__(self, *, sizes, latent_dim: int):
        super().__init__()
        self.net = nn.Linear(7, latent_dim)

    def forward(self, context):
        return self.net(context)
