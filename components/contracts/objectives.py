"""Contracts of the representation losses: objectives on a meta-batch's embeddings, and metric
losses on (anchor, positive, negative) task vectors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import torch

from components.contracts.core import build, contract, loss_terms, reaches, round_trip
from components.objectives.embeddings import TaskEmbeddings
from components.transitions import Transitions
from registry.validation import named_sizes

T, B, Z = 6, 4, 5
OBS, ACT = 3, 2  # the probe's transitions


class Objective(Protocol):
    needs_key: bool  # optional: True if it contrasts against a momentum key encoder

    def forward(self, embeddings: TaskEmbeddings) -> Mapping[str, torch.Tensor]: ...


class MetricLoss(Protocol):
    def forward(
        self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor
    ) -> Mapping[str, torch.Tensor]: ...


def embeddings(with_key: bool, obs_dim: int = OBS, act_dim: int = ACT, latent_dim: int = Z):
    """A meta-batch of 6 context batches of 3 tasks (each task twice: positives exist), with
    the context they came from and an encoder of other transitions."""
    g = torch.Generator().manual_seed(2)
    query = torch.randn(T, B, latent_dim, generator=g).tanh().requires_grad_()
    key = torch.randn(T, B, latent_dim, generator=g).tanh()
    context = Transitions(
        obs=torch.randn(T, B, obs_dim, generator=g),
        action=torch.randn(T, B, act_dim, generator=g).tanh(),
        reward=torch.randn(T, B, generator=g),
        sparse_reward=torch.zeros(T, B),
        next_obs=torch.randn(T, B, obs_dim, generator=g),
        terminated=torch.zeros(T, B),
        truncated=torch.zeros(T, B),
    )
    weight = torch.randn(2 * obs_dim + act_dim + 1, latent_dim, generator=g)

    def encode(t: Transitions) -> torch.Tensor:
        x = torch.cat([t.obs, t.action, t.next_obs, t.reward.unsqueeze(-1)], -1)
        return (x @ weight).tanh()

    goals = torch.randn(3, obs_dim, generator=g)

    def relabel(t: Transitions, tasks: torch.Tensor) -> Transitions:  # −distance to a goal
        return t.with_reward(-(t.next_obs - goals[tasks]).norm(dim=-1))

    return TaskEmbeddings(
        query=query,
        query_mean=query.mean(1),
        task=torch.tensor([0, 1, 2, 0, 1, 2]),
        key=key if with_key else None,
        key_mean=key.mean(1) if with_key else None,
        context=context,
        encode=encode,
        relabel=relabel,
    )


@contract("objective", Objective)
def probe_objective(factory, given) -> None:
    """An objective is built as cls() or, where it has networks of its own, with the sizes it
    names of obs_dim, act_dim, latent_dim and n_tasks (the trainer passes the run's)."""
    tiny = {"obs_dim": OBS, "act_dim": ACT, "latent_dim": Z, "n_tasks": 3}
    sizes = named_sizes(factory, **{**tiny, **given})

    def make():
        return build(factory, "be built as cls(**the sizes it takes) (settings: gin)", **sizes)

    objective = make()
    dims = {k: sizes.get(k, d) for k, d in (("obs_dim", OBS), ("act_dim", ACT), ("latent_dim", Z))}
    batch = embeddings(with_key=bool(getattr(objective, "needs_key", False)), **dims)
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
