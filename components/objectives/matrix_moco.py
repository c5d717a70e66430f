"""Matrix-form momentum contrast over task means (FOCAL++ paper, Eq. matrix-formMC).

L = −Tr(M), M_ij = log softmax_j(z_i^q · z_j^k / τ): T InfoNCE terms, one per task of the
meta-batch, whose positive is the same task's key mean and whose negatives are the other tasks'.
"""

from __future__ import annotations

import torch
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from registry import RecipeError, register
from registry.constraints import PositiveFloat
from registry.validation import check_arguments


@register("objective", "matrix_moco")
class MatrixMoCo(nn.Module):
    """−Σ_i log softmax_j(q_i·k_j/τ) at j = i over task means q, k [T, Z].

    A task that repeats in the meta-batch would be its own negative: those logits are masked
    out (the positive itself is kept), so the loss is safe with sampling with replacement.

    Args:
        temperature: τ (paper: 0.5).
        reduction: "sum" over the T terms as the paper writes it, or "mean".

    Example (query and key embeddings of four distinct tasks):
        >>> import torch
        >>> from components.objectives.embeddings import TaskEmbeddings
        >>> q, k = torch.randn(4, 8, 5), torch.randn(4, 8, 5)  # [T, B, Z]
        >>> emb = TaskEmbeddings(q, q.mean(1), torch.arange(4), key=k, key_mean=k.mean(1))
        >>> [name for name in MatrixMoCo()(emb) if name.startswith("loss_")]
        ['loss_contrastive']
    """

    needs_key = True  # the algorithm must provide a momentum key encoder
    seed_batching = True  # each seed's queries against its own keys, one loss per seed

    def __init__(self, *, temperature: PositiveFloat = 0.5, reduction: str = "sum"):
        super().__init__()
        check_arguments("matrix_moco", type(self).__init__, {"temperature": temperature})
        if reduction not in ("sum", "mean"):
            raise ValueError(f"matrix_moco.reduction must be 'sum' or 'mean', got {reduction!r}")
        self.temperature, self.reduction = temperature, reduction

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        if emb.key_mean is None:
            raise RecipeError(
                "objective matrix_moco needs key vectors, but the encoder setup has no key "
                "encoder: give the algorithm a momentum (EMA) key encoder"
            )
        query, key, same = emb.query_mean, emb.key_mean, emb.same_task()
        if emb.seeds > 1:  # each seed's queries against its own keys only: [K, T, T]
            query, key = query.unflatten(0, (emb.seeds, -1)), key.unflatten(0, (emb.seeds, -1))
            task = emb.task.view(emb.seeds, -1)
            same = task[:, :, None] == task[:, None, :]
        logits = query @ key.transpose(-2, -1) / self.temperature  # [(K,) T, T]
        t = logits.shape[-1]
        false_negative = same & ~torch.eye(t, dtype=torch.bool, device=same.device)
        logits = logits.masked_fill(false_negative, float("-inf"))
        log_prob = torch.log_softmax(logits, dim=-1).diagonal(dim1=-2, dim2=-1)  # M_ii
        accuracy = (logits.argmax(-1) == torch.arange(t, device=logits.device)).float()
        if emb.seeds > 1:
            loss = -log_prob.sum(-1) if self.reduction == "sum" else -log_prob.mean(-1)
            return {"loss_contrastive": loss, "contrastive_accuracy": accuracy.mean(-1).detach()}
        loss = -log_prob.sum() if self.reduction == "sum" else -log_prob.mean()
        return {"loss_contrastive": loss, "contrastive_accuracy": accuracy.mean().detach()}
