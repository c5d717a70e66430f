"""An example representation objective living outside the package: a variance ratio.

Registered as `variance_ratio` (kind `objective`); a recipe selects it with
`focal.objective = @variance_ratio`. See docs/EXTENDING.md.
"""

from __future__ import annotations

import torch
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from registry import register


@register("objective", "variance_ratio")
class VarianceRatio(nn.Module):
    """Spread of transitions inside a task over the spread of task vectors between tasks.

    Small when each task's transitions agree on one embedding and tasks sit far apart; needs
    no key encoder.

    Args:
        eps: keeps the ratio finite when all task vectors coincide.
    """

    def __init__(self, *, eps: float = 1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        within = emb.query.var(dim=1, unbiased=False).mean()  # over B, then tasks and dims
        between = emb.query_mean.var(dim=0, unbiased=False).mean()  # over tasks, then dims
        return {
            "loss_variance_ratio": within / (between + self.eps),
            "within_task_variance": within.detach(),
            "between_task_variance": between.detach(),
        }
