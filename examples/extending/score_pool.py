"""A context encoder of one's own: each transition embedded by an MLP, scored by a linear head,
and the task vector the softmax-weighted mean of the batch (docs/EXTENDING.md, section 5).

A context encoder sees the whole context batch, so it decides how transitions are weighed; its
contract asks that it treat the batch as a set (permuting the batch permutes the per-transition
outputs, z stays) at any parameters, and weights that are never negative.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from components.encoders.encoded import Encoded, weighted_mean
from registry import register


@register("context_encoder", "score_pool")
class ScorePool(nn.Module):
    """Context [T, B, F] -> Encoded: e = MLP(transition), w = B · softmax_batch(score(e) / τ),
    z = Σ w e / Σ w.

    Args:
        sizes: component sizes of a transition (s, a, s′, r; set by the algorithm).
        latent_dim: Z (set by the algorithm).
        hidden: width of the MLP's hidden layer.
        temperature: τ of the softmax over the batch (large: the plain mean).
    """

    # Seeds trained together (components/seeds): every layer is an nn.Linear, which the seed
    # stacking gives K sets of weights, and the softmax runs within each row (a task's batch):
    # nothing mixes rows, draws random numbers or reduces over them.
    seed_batching = True

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        hidden: int = 64,
        temperature: float = 1.0,
    ):
        super().__init__()
        self.embed = nn.Sequential(
            nn.Linear(sum(sizes), hidden), nn.ReLU(), nn.Linear(hidden, latent_dim)
        )
        self.score = nn.Linear(latent_dim, 1)
        self.temperature = temperature

    def forward(self, context: torch.Tensor) -> Encoded:
        e = self.embed(context)  # [T, B, Z]
        scores = self.score(e).squeeze(-1) / self.temperature  # [T, B]
        w = torch.softmax(scores, dim=1) * e.shape[1]  # mean weight 1, as the plain mean's
        return Encoded(e, w, weighted_mean(e, w))
