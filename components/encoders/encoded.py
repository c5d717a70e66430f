"""The named output of every context encoder."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Encoded:
    """per_transition [T, B, Z]; weights [T, B] (≥ 0, averaging 1 over B); mean [T, Z].

    `mean` is the weighted batch mean Σ_b w_b e_b / B, the task vector z.
    """

    per_transition: torch.Tensor
    weights: torch.Tensor
    mean: torch.Tensor


def weighted_mean(per_transition: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """[T, B, Z], [T, B] -> [T, Z]: Σ_b w_b e_b / B."""
    return (per_transition * weights.unsqueeze(-1)).mean(1)
