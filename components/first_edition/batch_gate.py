"""The first edition's batch-wise gated attention (FOCAL++ §3.2 as first built; the paper's gate
is `block_gate`, components/encoders/attention_blocks.py): one non-negative weight per context
transition.

Squeeze-and-excitation along the batch: each transition's embedding is scored together with the
batch's mean embedding (the squeeze), and the scores become weights by a softmax over the batch
scaled by B, so a task's weights average 1 and the task vector is a weighted mean. The last
layer starts at zero, so the weights start uniform and z starts as the plain mean. Scoring each
transition from (its embedding, the batch mean) keeps the gate independent of the transitions'
order and of B, which the meta-test's growing context needs (the paper does not say how its
gate handled varying B).
"""

from __future__ import annotations

import torch
from torch import nn

from registry import register
from registry.constraints import PositiveInt


@register("attention", "batch_gate")
class BatchGate(nn.Module):
    """Weights [T, B] (≥ 0, mean 1 over B) for per-transition embeddings [T, B, Z].

    Args:
        latent_dim: Z.
        reduction: hidden width = max(4, 2Z / reduction) (paper: reduction 16).
    """

    seed_batching = True  # components/seeds: weights over each task's own batch

    def __init__(self, *, latent_dim: int, reduction: PositiveInt = 16):
        super().__init__()
        hidden = max(4, 2 * latent_dim // reduction)
        self.score = nn.Sequential(
            nn.Linear(2 * latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )
        nn.init.zeros_(self.score[-1].weight)  # uniform weights at initialisation
        nn.init.zeros_(self.score[-1].bias)

    def forward(self, per_transition: torch.Tensor) -> torch.Tensor:
        squeeze = per_transition.mean(1, keepdim=True).expand_as(per_transition)  # [T, B, Z]
        logits = self.score(torch.cat([per_transition, squeeze], -1)).squeeze(-1)  # [T, B]
        return per_transition.shape[1] * torch.softmax(logits, dim=1)
