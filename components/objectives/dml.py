"""FOCAL's distance-metric loss (Li et al. 2021, FOCAL; DECISIONS §3 for the reference's form).

Task vectors of the same task are pulled together and those of different tasks pushed apart,
over all pairs i < j of the meta-batch. Positives exist only when a task repeats in the
meta-batch (the reference samples tasks with replacement). The FOCAL++ hyperparameter table
calls the weight of this loss β ("DML loss weight", 1); the paper form's numerator β of the
negative term is a separate argument here.
"""

from __future__ import annotations

import torch
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from registry import register
from registry.constraints import NonNegativeFloat, PositiveFloat


@register("objective", "focal_dml")
class FocalDML(nn.Module):
    """FOCAL's distance metric loss on task vectors z^q [T, Z].

    Args:
        form: "reference" — as the FOCAL code: D = mean over dims of (z_i − z_j)²; positives
            sqrt(D + 1e-3), negatives 1/(D + 0.1), each averaged over its pairs; "paper" —
            positives ‖z_i − z_j‖², negatives β/(‖z_i − z_j‖ⁿ + ε), averaged likewise.
        weight: multiplies the total (the reference used 10; the FOCAL++ table says 1).
        beta, n, eps: the paper form's negative term.

    Example (task vectors of four context batches, two tasks each seen twice):
        >>> import torch
        >>> from components.objectives.embeddings import TaskEmbeddings
        >>> z = torch.randn(4, 8, 5)  # [T, B, Z] per-transition embeddings
        >>> terms = FocalDML()(TaskEmbeddings(z, z.mean(1), torch.tensor([0, 1, 0, 1])))
        >>> sorted(terms), int(terms["dml_positive_pairs"])
        (['dml_negative', 'dml_positive', 'dml_positive_pairs', 'loss_dml'], 2)
    """

    seed_batching = True  # pairs within each seed's meta-batch, one loss per seed

    def __init__(
        self,
        *,
        form: str = "reference",
        weight: NonNegativeFloat = 1.0,
        beta: PositiveFloat = 1.0,
        n: PositiveFloat = 2.0,
        eps: PositiveFloat = 0.1,
    ):
        super().__init__()
        if form not in ("reference", "paper"):
            raise ValueError(f"focal_dml.form must be 'reference' or 'paper', got {form!r}")
        self.form, self.weight, self.beta, self.n, self.eps = form, weight, beta, n, eps

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        z = emb.query_mean  # [T, Z]; K seeds' meta-batches: [K, T, Z], each seed on its own
        same_task = emb.same_task()
        if emb.seeds > 1:
            z = z.unflatten(0, (emb.seeds, -1))
            task = emb.task.view(emb.seeds, -1)
            same_task = task[:, :, None] == task[:, None, :]  # [K, T, T]
        t = z.shape[-2]
        pairs = torch.triu(torch.ones(t, t, dtype=torch.bool, device=z.device), diagonal=1)
        same = same_task & pairs
        different = ~same_task & pairs
        squared = ((z[..., :, None, :] - z[..., None, :, :]) ** 2).sum(-1)  # [(K,) T, T]
        if self.form == "reference":
            d = squared / z.shape[-1]
            positive, negative = torch.sqrt(d + 1e-3), 1.0 / (d + 0.1)
        else:
            distance = torch.sqrt(squared + 1e-12)
            positive, negative = squared, self.beta / (distance**self.n + self.eps)
        pos = _masked_mean(positive, same)
        neg = _masked_mean(negative, different)
        return {
            "loss_dml": self.weight * (pos + neg),
            "dml_positive": pos.detach(),
            "dml_negative": neg.detach(),
            "dml_positive_pairs": _count(same).detach(),
        }


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` [T, T] where `mask`, 0 when nothing is masked in; one per seed for K
    seeds' [K, T, T]."""
    return _count(values * mask) / _count(mask).clamp(min=1)


def _count(values: torch.Tensor) -> torch.Tensor:
    """The sum over the last two dimensions (of a mask: its count)."""
    return values.sum() if values.dim() == 2 else values.sum((-2, -1))
