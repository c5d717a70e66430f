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


def diagnostics(encoded: Encoded, seeds: int = 1) -> dict[str, torch.Tensor]:
    """What catches a failing seed while it trains, one value per seed (a scalar for one):
    the gate's effective sample size (Σw)² / Σw² per task (B when every weight is 1, 1 when one
    transition carries the task vector) and its largest weight, and the range of z."""
    w, z = encoded.weights.detach(), encoded.mean.detach()
    ess = w.sum(1).square() / w.square().sum(1).clamp_min(torch.finfo(w.dtype).tiny)  # [K·T]
    rows = {"gate_ess": ess, "gate_max_weight": w.amax(1), "z_min": z.amin(1), "z_max": z.amax(1)}
    reduce = {"gate_ess": "mean", "gate_max_weight": "amax", "z_min": "amin", "z_max": "amax"}
    return {
        name: getattr(value.reshape(seeds, -1), reduce[name])(1).squeeze(0)
        for name, value in rows.items()
    }
