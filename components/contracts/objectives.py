"""Contracts of the representation losses: objectives on a meta-batch's embeddings, and metric
losses on (anchor, positive, negative) task vectors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import torch

from components.contracts.core import build, contract, loss_terms, reaches, round_trip
from components.objectives.embeddings import TaskEmbeddings

T, B, Z = 6, 4, 5


class Objective(Protocol):
    needs_key: bool  # optional: True if it contrasts against a momentum key encoder

    def forward(self, embeddings: TaskEmbeddings) -> Mapping[str, torch.Tensor]: ...


class MetricLoss(Protocol):
    def forward(
        self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor
    ) -> Mapping[str, torch.Tensor]: ...


def embeddings(with_key: bool) -> TaskEmbeddings:
    """A meta-batch of 6 context batches of 3 tasks (each task twice: positives exist)."""
    g = torch.Generator().manual_seed(2)
    query = torch.randn(T, B, Z, generator=g).tanh().requires_grad_()
    key = torch.randn(T, B, Z, generator=g).tanh()
    return TaskEmbeddings(
        query=query,
        query_mean=query.mean(1),
        task=torch.tensor([0, 1, 2, 0, 1, 2]),
        key=key if with_key else None,
        key_mean=key.mean(1) if with_key else None,
    )


@contract("objective", Objective)
def probe_objective(factory, given) -> None:
    def make():
        return build(factory, "be built as cls() (its settings are gin bindings)")

    objective = make()
    batch = embeddings(with_key=bool(getattr(objective, "needs_key", False)))
    losses = loss_terms(objective(batch), "forward(TaskEmbeddings)")
    total = sum(losses.values())
    reaches(total, objective, "its loss", inputs=(batch.query,))
    if isinstance(objective, torch.nn.Module):
        round_trip(make, objective, lambda m: dict(m(batch)))


@contract("metric_loss", MetricLoss)
def probe_metric_loss(factory, given) -> None:
    def make():
        return build(factory, "be built as cls() (its settings are gin bindings)")

    metric = make()
    g = torch.Generator().manual_seed(3)
    anchor, positive, negative = (torch.randn(T, Z, generator=g) for _ in range(3))
    anchor.requires_grad_()
    losses = loss_terms(metric(anchor, positive, negative), "forward(anchor, positive, negative)")
    reaches(sum(losses.values()), metric, "its loss", inputs=(anchor,))
