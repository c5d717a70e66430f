"""The triplet loss MBML trains its context encoder with (Li et al., NeurIPS 2020).

An anchor is a task's context relabeled with another task's learned reward (and transition)
models; its positive is that other task's real context and its negative the original task's.
The encoder must place the anchor nearer the positive than the negative by a margin, so task
vectors follow rewards and dynamics, not which states a task's behaviour visited.
"""

from __future__ import annotations

import torch
from torch import nn

from registry import register
from registry.constraints import NonNegativeFloat


def triplet_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, margin: float
) -> torch.Tensor:
    """mean over rows of max(0, ‖a − p‖² − ‖a − n‖² + margin); inputs [T, Z]."""
    closer = ((anchor - positive) ** 2).sum(-1)
    farther = ((anchor - negative) ** 2).sum(-1)
    return torch.relu(closer - farther + margin).mean()


@register("metric_loss", "triplet")
class Triplet(nn.Module):
    """MBML's metric loss on task vectors (anchor, positive, negative) [T, Z].

    Args:
        margin: the distance margin (squared distances).
    """

    def __init__(self, *, margin: NonNegativeFloat = 1.0):
        super().__init__()
        self.margin = margin

    def forward(
        self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        return {"loss_triplet": triplet_loss(anchor, positive, negative, self.margin)}
