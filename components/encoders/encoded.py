"""The named output of every context encoder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Encoded:
    """per_transition [T, B, Z]; weights [T, B] (≥ 0, averaging 1 over B); mean [T, Z].

    `mean` is the task vector z: the weighted batch mean Σ_b w_b e_b / B of a deterministic
    encoder; a probabilistic encoder's posterior sample (its mean in eval mode).
    `losses`: the encoder's own loss terms (`loss_*`, e.g. PEARL's KL to the prior), added to
    the representation objective's by the trainer.
    """

    per_transition: torch.Tensor
    weights: torch.Tensor
    mean: torch.Tensor
    losses: Mapping[str, torch.Tensor] = field(default_factory=dict)


def weighted_mean(per_transition: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """[T, B, Z], [T, B] -> [T, Z]: Σ_b w_b e_b / B."""
    return (per_transition * weights.unsqueeze(-1)).mean(1)
