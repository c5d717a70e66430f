"""Contracts of the representation losses: objectives on a meta-batch's embeddings, and metric
losses on (anchor, positive, negative) task vectors."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

import torch

from components.contracts.core import (
    Broken,
    at_any_parameters,
    build,
    contract,
    finite_on,
    kept_as_promised,
    loss_terms,
    reaches,
    round_trip,
    snapshot,
)
from components.contracts.seeds import batches_like_singles
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


def embeddings(
    with_key: bool,
    obs_dim: int = OBS,
    act_dim: int = ACT,
    latent_dim: int = Z,
    n_tasks: int = 3,
    seed: int = 2,
):
    """A meta-batch of 6 context batches of min(3, n_tasks) tasks (each task at least twice:
    positives exist), with the context they came from and an encoder of other transitions."""
    g = torch.Generator().manual_seed(seed)
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
    # the query encoder's weights: what encode() returns carries a gradient to them, as in a run
    weight = torch.randn(2 * obs_dim + act_dim + 1, latent_dim, generator=g).requires_grad_()

    def encode(t: Transitions) -> torch.Tensor:
        x = torch.cat([t.obs, t.action, t.next_obs, t.reward.unsqueeze(-1)], -1)
        return (x @ weight).tanh()

    encode.weight = weight  # type: ignore[attr-defined]  (the probe's gradient check reads it)

    tasks = torch.arange(T) % min(3, n_tasks)  # ids within the training tasks the run has
    goals = torch.randn(int(tasks.max()) + 1, obs_dim, generator=g)

    def relabel(t: Transitions, tasks: torch.Tensor) -> Transitions:  # −distance to a goal
        return t.with_reward(-(t.next_obs - goals[tasks]).norm(dim=-1))

    return TaskEmbeddings(
        query=query,
        query_mean=query.mean(1),
        task=tasks,
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
    kept = snapshot(objective)
    defaults = (("obs_dim", OBS), ("act_dim", ACT), ("latent_dim", Z), ("n_tasks", 3))
    dims = {k: sizes.get(k, given.get(k, d)) for k, d in defaults}
    batch = embeddings(with_key=bool(getattr(objective, "needs_key", False)), **dims)
    losses = loss_terms(objective(batch), "forward(TaskEmbeddings)")
    total = sum(losses.values())
    trains_the_encoder(total, batch)
    reaches(total, objective, "its loss")
    kept_as_promised(objective, kept, "the objective")
    finite_on(objective, degenerate(batch), _losses, "`loss_*` terms", leaves=_leaves)

    def finite_terms(m, when: str) -> None:  # wherever training takes its parameters
        loss_terms(m(batch), "forward(TaskEmbeddings)")
        finite_on(m, degenerate(batch), _losses, "`loss_*` terms", leaves=_leaves)

    at_any_parameters(objective, finite_terms)
    if isinstance(objective, torch.nn.Module):
        round_trip(make, objective, lambda m: dict(m(batch)))

    def seed_inputs(k: int) -> tuple[TaskEmbeddings]:
        seeded = embeddings(batch.key is not None, **dims, seed=50 + k)
        return (dataclasses.replace(seeded, context=None, encode=None, relabel=None),)

    batches_like_singles(
        make, seed_inputs, lambda m, b: dict(m(b)), fold=_fold_embeddings, what="loss terms"
    )


def _fold_embeddings(each: list[tuple[TaskEmbeddings]]) -> tuple[TaskEmbeddings]:
    """K seeds' meta-batches as one (tensors seed-major, `seeds` = K)."""
    batches = [b for (b,) in each]

    def cat(name: str):
        values = [getattr(b, name) for b in batches]
        return None if values[0] is None else torch.cat(values)

    names = ("query", "query_mean", "task", "key", "key_mean")
    return (TaskEmbeddings(**{n: cat(n) for n in names}, seeds=len(batches)),)


def trains_the_encoder(loss: torch.Tensor, batch: TaskEmbeddings) -> None:
    """The loss has a gradient to the embeddings it was given, or to what `encode` returns:
    the encoder learns from it (only the query side: keys come from a momentum copy)."""
    encoder = [batch.query, *_encoder_weights(batch)]
    if loss.requires_grad:
        grads = torch.autograd.grad(loss, encoder, allow_unused=True, retain_graph=True)
        if any(g is not None for g in grads):
            return
    raise Broken(
        "let its loss carry a gradient to the query embeddings (query, query_mean, or what "
        "encode() returns): only through them does the encoder learn",
        "no gradient reaches them (it was computed from detached tensors, keys, or the "
        "context alone)",
        "compute the loss from emb.query / emb.query_mean without .detach()",
    )


def _encoder_weights(batch: TaskEmbeddings) -> list[torch.Tensor]:
    weight = getattr(batch.encode, "weight", None)
    return [weight] if weight is not None else []


def _losses(objective, batch: TaskEmbeddings) -> dict[str, torch.Tensor]:
    return {k: v for k, v in dict(objective(batch)).items() if k.startswith("loss_")}


def _leaves(batch: TaskEmbeddings) -> list[torch.Tensor]:
    return [batch.query]


def degenerate(batch: TaskEmbeddings) -> dict[str, TaskEmbeddings]:
    """Meta-batches a run meets that random embeddings never show."""
    alike = batch.query.detach()[:, :1].expand_as(batch.query).clone().requires_grad_()
    constant = batch.query.detach().clone()
    constant[..., 0] = 0.5
    constant.requires_grad_()
    zero = torch.zeros_like(batch.query).requires_grad_()
    silent = dataclasses.replace(batch.context, reward=torch.zeros_like(batch.context.reward))
    cases = {
        "embeddings alike across each context batch (one transition repeated)": alike,
        "embeddings where one feature is the same everywhere": constant,
        "all-zero embeddings (an encoder at its start)": zero,
    }
    found = {d: dataclasses.replace(batch, query=q, query_mean=q.mean(1)) for d, q in cases.items()}
    found["a context whose rewards are all zero (sparse rewards)"] = dataclasses.replace(
        batch, context=silent
    )
    return found


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
    at_any_parameters(
        metric, lambda m, when: loss_terms(m(anchor, positive, negative), "forward(...)")
    )
