"""InfoNCE over transitions (paper Eq. InfoNCE as the building block, applied per transition).

For each position b of the context batches, the query embedding of task i's b-th transition is
matched against the key embeddings of every task's b-th transition: the positive is the same
task's (an independent transition of that task), the negatives are the other tasks'. No task
means are taken; this is the transition-level contrast that Theorem 3.2 compares against.
"""

from __future__ import annotations

import torch
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from registry import RecipeError, register
from registry.constraints import PositiveFloat
from registry.validation import check_arguments


@register("objective", "infonce")
class TransitionInfoNCE(nn.Module):
    """Mean over B of T-way InfoNCE between query [T, B, Z] and key [T, B, Z] transitions.

    Args:
        temperature: τ.
    """

    needs_key = True  # the algorithm must provide a momentum key encoder

    def __init__(self, *, temperature: PositiveFloat = 0.5):
        super().__init__()
        check_arguments("infonce", type(self).__init__, {"temperature": temperature})
        self.temperature = temperature

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        if emb.key is None:
            raise RecipeError(
                "objective infonce needs key embeddings, but the encoder setup has no key "
                "encoder: give the algorithm a momentum (EMA) key encoder"
            )
        q = emb.query.transpose(0, 1)  # [B, T, Z]
        k = emb.key.transpose(0, 1)  # [B, T, Z]
        logits = q @ k.transpose(1, 2) / self.temperature  # [B, T, T]
        same = emb.same_task()
        false_negative = same & ~torch.eye(len(same), dtype=torch.bool, device=same.device)
        logits = logits.masked_fill(false_negative, float("-inf"))
        log_prob = torch.log_softmax(logits, dim=2).diagonal(dim1=1, dim2=2)  # [B, T]
        return {"loss_contrastive": -log_prob.mean(), "infonce_log_prob": log_prob.mean().detach()}
