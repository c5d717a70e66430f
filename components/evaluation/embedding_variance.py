"""Table 2's metric: how much a task's vector z moves from one context batch to the next.

For every training task, draw `draws` independent context batches, encode each into a task
vector z [Z], take the variance over draws per latent dimension, and average over tasks and
latent dimensions. All tasks × draws are one encoder call ([T·draws, B, F]).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.evaluation.modes import eval_mode
from registry import register
from registry.constraints import Range
from registry.validation import check_arguments

Draws = Annotated[int, Range(low=2)]  # a variance needs two draws


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
    draws: Draws = 32,
) -> EmbeddingVariance:
    """Variance of task vectors over `draws` context batches of every task of `sampler`."""
    check_arguments("embedding_variance", embedding_variance, {"draws": draws})
    with eval_mode(encoder):
        positions = torch.arange(sampler.n_tasks, device=sampler.device).repeat(draws)
        context = layout.tensor(sampler.sample(positions, context_batch, sparse=layout.sparse))
        z = encoder(context).mean.reshape(draws, sampler.n_tasks, -1)  # [D, T, Z]
    per_task = variance_over_draws(z.float())
    return EmbeddingVariance(float(per_task.mean()), per_task.tolist())


@register("analysis", "embedding_variance")
class VarianceAnalysis:
    """Table 2 for a trained run: embedding variance over its training tasks.

    Args:
        draws: context batches per task (of the run's context batch size).
    """

    section = "variance"  # the report section that tables it

    def __init__(self, *, draws: Draws = 32):
        check_arguments("embedding_variance", VarianceAnalysis.__init__, locals())
        self.draws = draws

    def __call__(self, trained, figures: Path) -> dict:
        result = embedding_variance(
            trained.encoder,
            trained.train,
            trained.layout,
            context_batch=trained.sizes.context_batch,
            draws=self.draws,
        )
        return {
            "embedding_variance": result.mean,
            "embedding_variance_per_task": result.per_task,
            "sparsity": sparsity(trained.train),
        }


def sparsity(sampler: TensorSampler) -> float:
    """The sparsity ratio of a sampler's data: the fraction of its real transitions whose
    sparse reward is zero (the x-axis of the variance-sparsity study)."""
    n = sampler.data.sparse_reward.shape[1]
    real = torch.arange(n, device=sampler.device)[None, :] < sampler.length[:, None]
    return float((sampler.data.sparse_reward[real] == 0).float().mean())
