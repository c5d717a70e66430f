"""Figure 3 (right): a 2-D t-SNE map of per-transition query embeddings, one colour per task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.evaluation.modes import eval_mode
from registry import register


@dataclass(frozen=True)
class TaskMap:
    """points [N, 2] of N query embeddings and the task index [N] of each."""

    points: np.ndarray
    task: np.ndarray


def tsne_map(embeddings: np.ndarray, task: np.ndarray, *, seed: int = 0) -> TaskMap:
    """Embed [N, Z] in 2-D with t-SNE (perplexity capped below N)."""
    n = len(embeddings)
    # imported when used: sklearn costs every tool ~2 s of start-up
    from sklearn.manifold import TSNE

    tsne = TSNE(n_components=2, perplexity=min(30.0, max(2.0, (n - 1) / 3)), random_state=seed)
    return TaskMap(tsne.fit_transform(np.asarray(embeddings, dtype=np.float64)), np.asarray(task))


@torch.no_grad()
def query_embeddings(
    encoder: nn.Module,
    sampler: TensorSampler,
    layout: ContextLayout,
    *,
    tasks: int,
    per_task: int,
    seed: int = 0,
) -> TaskMap:
    """t-SNE of `per_task` per-transition embeddings of the first `tasks` tasks of `sampler`."""
    with eval_mode(encoder):
        positions = torch.arange(min(tasks, sampler.n_tasks), device=sampler.device)
        batch = sampler.sample(positions, per_task, sparse=layout.sparse)
        e = encoder(layout.tensor(batch)).per_transition  # [T, B, Z]
    labels = sampler.task_ids[positions.cpu()].repeat_interleave(per_task).numpy()
    return tsne_map(e.reshape(-1, e.shape[-1]).float().cpu().numpy(), labels, seed=seed)


@register("analysis", "tsne")
class TSNEAnalysis:
    """Figure 3 (right) for a trained run: `tsne.png` of query embeddings by task.

    Args:
        tasks: how many training tasks to show.
        per_task: transitions per task.
    """

    section = None  # its figures go to the run's figures/; no table reads it

    def __init__(self, *, tasks: int = 10, per_task: int = 50):
        self.tasks, self.per_task = tasks, per_task

    def __call__(self, trained, figures: Path) -> dict:
        task_map = query_embeddings(
            trained.encoder,
            trained.train,
            trained.layout,
            tasks=self.tasks,
            per_task=self.per_task,
            seed=trained.run_context.seed,
        )
        ctx = trained.run_context
        # imported when used, as sklearn is: matplotlib costs ~0.7 s of start-up
        from components.outputs.figures import scatter_by_label

        figure = scatter_by_label(
            task_map.points,
            task_map.task,
            title=f"query embeddings, {ctx.env} ({ctx.run_dir.name})",
            path=figures / "tsne.png",
        )
        return {"tsne_figure": figure.name, "tsne_points": len(task_map.points)}
