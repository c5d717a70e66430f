"""UNICORN's supervised variant (Li et al., NeurIPS 2024, UNICORN-SUP): the decoder replaced
by a classifier p_θ(M | z) of the training task, trained by cross-entropy.

The paper's Figure 3 describes it; its repository does not contain it, so this is our reading:
a linear-softmax or MLP classifier of the task vector over the training tasks (the meta-batch's
task positions), not detached, beside FOCAL's metric loss.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from components.objectives.networks import mlp
from registry import register
from registry.constraints import NonNegativeFloat, PositiveInt
from registry.validation import check_arguments


@register("objective", "task_classifier")
class TaskClassifier(nn.Module):
    """Cross-entropy of the training task given the task vector z [T, Z].

    Args:
        latent_dim: Z; n_tasks: the training tasks (both set by the algorithm).
        hidden: hidden widths of the classifier (empty: linear).
        weight: multiplies the cross-entropy.
    """

    def __init__(
        self,
        *,
        latent_dim: PositiveInt,
        n_tasks: PositiveInt,
        hidden: tuple[PositiveInt, ...] = (64,),
        weight: NonNegativeFloat = 1.0,
    ):
        super().__init__()
        check_arguments("task_classifier", type(self).__init__, locals())
        self.weight = weight
        self.net = mlp(latent_dim, hidden, n_tasks)

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        logits = self.net(emb.query_mean)
        loss = F.cross_entropy(logits, emb.task)
        accuracy = (logits.argmax(-1) == emb.task).float().mean()
        return {"loss_classifier": self.weight * loss, "classifier_accuracy": accuracy.detach()}
