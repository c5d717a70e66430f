"""CORRO's objective: its negatives share the anchor's (s, a), its loss against a direct
formula, and an encoder that reads only (s, a) cannot beat chance."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from components.objectives.corro import CORROInfoNCE
from components.objectives.embeddings import TaskEmbeddings
from components.transitions import Transitions
from registry import RecipeError
from tests.components.objectives.contexts import random_context

T, B, OBS, ACT = 3, 5, 2, 1


def context(seed: int = 0) -> Transitions:
    return random_context(T, B, OBS, ACT, seed)


def features(t: Transitions) -> torch.Tensor:
    return torch.cat([t.obs, t.action, t.next_obs, t.reward.unsqueeze(-1)], -1)


def test_negatives_keep_the_anchors_state_and_action():
    ctx = context()
    torch.manual_seed(0)
    made = CORROInfoNCE(negatives=4000, reward_noise=0.5, next_obs_noise=0.2).generate(ctx)
    assert made.obs.shape == (T, B * 4000, OBS)
    assert torch.equal(made.obs, ctx.obs.repeat_interleave(4000, 1))
    assert torch.equal(made.action, ctx.action.repeat_interleave(4000, 1))
    reward_noise = made.reward - ctx.reward.repeat_interleave(4000, 1)
    next_noise = made.next_obs - ctx.next_obs.repeat_interleave(4000, 1)
    assert reward_noise.std().item() == pytest.approx(0.5, rel=0.02)
    assert next_noise.std().item() == pytest.approx(0.2, rel=0.02)
    rewards_only = CORROInfoNCE(negatives=3, next_obs_noise=0.0).generate(ctx)
    assert torch.equal(rewards_only.next_obs, ctx.next_obs.repeat_interleave(3, 1))


def test_the_loss_against_a_direct_formula():
    ctx = context(1)
    weight = torch.randn(2 * OBS + ACT + 1, 4, generator=torch.Generator().manual_seed(2))

    def encode(t: Transitions) -> torch.Tensor:
        return features(t) @ weight

    query = encode(ctx).requires_grad_()
    emb = TaskEmbeddings(query, query.mean(1), torch.arange(T), context=ctx, encode=encode)
    corro = CORROInfoNCE(negatives=6, temperature=0.1)
    torch.manual_seed(3)
    loss = corro(emb)["loss_contrastive"]
    torch.manual_seed(3)
    negatives = F.normalize(encode(corro.generate(ctx)), dim=-1).reshape(T, B, 6, -1)
    q = F.normalize(query.detach(), dim=-1)
    expected = []
    for t in range(T):
        for b in range(B):
            positive = q[t, b] @ q[t, (b - 1) % B] / 0.1
            others = negatives[t, b] @ q[t, b] / 0.1
            expected.append(-(positive - torch.logsumexp(torch.cat([positive[None], others]), 0)))
    assert loss.item() == pytest.approx(torch.stack(expected).mean().item(), rel=1e-5)


def test_an_encoder_of_state_and_action_alone_cannot_beat_chance():
    """Its negatives embed exactly as their anchor, so the positive can at best tie them:
    the loss is at least log(1 + N)."""
    ctx = context(4)
    weight = torch.randn(OBS + ACT, 4, generator=torch.Generator().manual_seed(5))

    def encode(t: Transitions) -> torch.Tensor:
        return torch.cat([t.obs, t.action], -1) @ weight

    query = encode(ctx)
    emb = TaskEmbeddings(query, query.mean(1), torch.arange(T), context=ctx, encode=encode)
    loss = CORROInfoNCE(negatives=8)(emb)["loss_contrastive"]
    assert loss.item() >= math.log(1 + 8) - 1e-5


def test_corro_needs_context_and_encoder_and_some_noise():
    query = torch.zeros(T, B, 4)
    with pytest.raises(RecipeError, match="needs the context transitions and the encoder"):
        CORROInfoNCE()(TaskEmbeddings(query, query.mean(1), torch.arange(T), context=context()))
    with pytest.raises(RecipeError, match="both 0"):
        CORROInfoNCE(reward_noise=0.0, next_obs_noise=0.0)


def test_relabeled_negatives_carry_another_rows_outcome_of_the_same_transition():
    ctx = context(6)
    goals = torch.randn(T, OBS, generator=torch.Generator().manual_seed(7))
    seen = []

    def relabel(t: Transitions, tasks: torch.Tensor) -> Transitions:
        seen.append(tasks)
        next_obs = t.obs + goals[tasks]  # each task's own step
        return dataclasses.replace(t, next_obs=next_obs, reward=-next_obs.norm(dim=-1))

    task = torch.tensor([2, 0, 1])  # the meta-batch's rows hold these tasks
    corro = CORROInfoNCE(negatives=5, outcome="relabel", next_obs_noise=0.5)
    torch.manual_seed(0)
    made = corro.generate(ctx, task, relabel)
    (tasks,) = seen
    own = task[:, None].expand_as(tasks)
    assert tasks.shape == (T, B * 5) and bool((tasks != own).all())  # always another row's
    assert torch.equal(made.obs, ctx.obs.repeat_interleave(5, 1))
    assert torch.equal(made.action, ctx.action.repeat_interleave(5, 1))
    # the relabeled outcome as it is: no noise on top of it
    assert torch.equal(made.next_obs, ctx.obs.repeat_interleave(5, 1) + goals[tasks])
    assert torch.equal(made.reward, -made.next_obs.norm(dim=-1))
    with pytest.raises(RecipeError, match=r"needs TaskEmbeddings\.relabel"):
        query = torch.zeros(T, B, 4)
        emb = TaskEmbeddings(query, query.mean(1), task, context=ctx, encode=features)
        corro(emb)
    with pytest.raises(RecipeError, match="'noise', 'relabel' or 'model'"):
        CORROInfoNCE(outcome="cvae")


def test_negatives_equal_to_their_anchor_are_counted():
    """A relabeling under which every task agrees (here: the identity) makes every negative
    its anchor's copy, which the objective reports; noise makes none."""
    ctx, task = context(3), torch.tensor([0, 1, 2])
    query = features(ctx)
    emb = TaskEmbeddings(
        query, query.mean(1), task, context=ctx, encode=features, relabel=lambda t, _: t
    )
    assert CORROInfoNCE(negatives=4, outcome="relabel")(emb)["corro_negatives_as_anchor"] == 1.0
    torch.manual_seed(0)
    assert CORROInfoNCE(negatives=4)(emb)["corro_negatives_as_anchor"] == 0.0
