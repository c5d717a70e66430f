"""Table 2's metric: how much a task's vector z moves from one context batch to the next.

For every training task, draw `draws` independent context batches, encode each into a task
vector z [Z], take the variance over draws per latent dimension, and average over tasks and
latent dimensions. All tasks × draws are one encoder call ([T·draws, B, F]).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from registry import register


@dataclass(frozen=True)
class EmbeddingVariance:
    """mean: the Table 2 number; per_task [T]: each task's variance averaged over dimensions."""

    mean: float
    per_task: list[float]


def variance_over_draws(z: torch.Tensor) -> torch.Tensor:
    """z [D draws, T, Z] -> per-task variance [T], averaged over dimensions (population
    variance over the draws, as numpy's default)."""
    return z.var(dim=0, unbiased=False).mean(-1)


@torch.no_grad()
def embedding_variance(
    encoder: nn.Module,
    sampler: TensorSampler,
    layout: ContextLayout,
    *,
    context_batch: int,
    draws: int = 32,
) -> EmbeddingVariance:
    """Variance of task vectors over `draws` context batches of every task of `sampler`."""
    if draws < 2:
        raise ValueError(f"a variance needs at least 2 draws, got {draws}")
    was_training = encoder.training
    encoder.eval()
    try:
        positions = torch.arange(sampler.n_tasks, device=sampler.device).repeat(draws)
        context = layout.tensor(sampler.sample(positions, context_batch, sparse=layout.sparse))
        z = encoder(context).mean.reshape(draws, sampler.n_tasks, -1)  # [D, T, Z]
    finally:
        encoder.train(was_training)
    per_task = variance_over_draws(z.float())
    return EmbeddingVariance(float(per_task.mean()), per_task.tolist())


@register("evaluator", "embedding_variance")
class VarianceAnalysis:
    """Table 2 for a trained run: embedding variance over its training tasks.

    Args:
        draws: context batches per task (of the run's context batch size).
    """

    def __init__(self, *, draws: int = 32):
        self.draws = draws

    def __call__(self, trained, figures: Path) -> dict:
        result = embedding_variance(
            trained.encoder,
            trained.train,
            trained.layout,
            context_batch=trained.context_batch,
            draws=self.draws,
        )
        return {"embedding_variance": result.mean, "embedding_variance_per_task": result.per_task}
