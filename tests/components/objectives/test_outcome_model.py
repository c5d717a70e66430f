"""CORRO's outcome model: a CVAE of (s′, r) given (s, a) on known systems, and CORRO's
negatives drawn from it."""

from __future__ import annotations

import pytest
import torch

from components.objectives.corro import CORROInfoNCE
from components.objectives.embeddings import TaskEmbeddings
from components.objectives.outcome_model import OutcomeCVAE
from components.transitions import Transitions
from registry import RecipeError
from tests.components.objectives.contexts import random_context

OBS, ACT = 3, 2


def linear_tasks(offsets: list[float], n: int, seed: int) -> Transitions:
    """[len(offsets), n] transitions of linear systems s′ = s + M a + c, r = w·s + c: tasks
    that differ by an offset c of their dynamics and reward."""
    g = torch.Generator().manual_seed(seed)
    m = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    w = torch.tensor([1.0, -1.0, 0.5])
    c = torch.tensor(offsets)[:, None]
    obs = torch.randn(len(offsets), n, OBS, generator=g)
    action = torch.rand(len(offsets), n, ACT, generator=g) * 2 - 1
    zeros = torch.zeros(len(offsets), n)
    return Transitions(
        obs=obs,
        action=action,
        reward=obs @ w + c,
        sparse_reward=zeros,
        next_obs=obs + action @ m.T + c[..., None],
        terminated=zeros,
        truncated=zeros,
    )


def outcome(t: Transitions) -> torch.Tensor:
    return torch.cat([t.next_obs, t.reward.unsqueeze(-1)], -1)


def fit(model: OutcomeCVAE, offsets: list[float], steps: int) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(steps):
        loss = model.loss(linear_tasks(offsets, 128, seed=step))["loss_outcome_model"]
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_one_linear_system_is_learned_to_its_outcome():
    torch.manual_seed(0)
    model = OutcomeCVAE(OBS, ACT, noise_dim=2, hidden=(64,))
    fit(model, [0.0], 600)
    held_out = linear_tasks([0.0], 500, seed=10_000)
    drawn = model.sample(held_out)
    # one task, deterministic outcomes: every draw lands on the true outcome
    assert ((drawn.next_obs - held_out.next_obs) ** 2).mean() < 0.02
    assert ((drawn.reward - held_out.reward) ** 2).mean() < 0.02
    assert torch.equal(drawn.obs, held_out.obs) and torch.equal(drawn.action, held_out.action)


def test_pooled_tasks_give_draws_of_either_tasks_outcome():
    """Two tasks pooled with no label: given (s, a) the model draws one task's outcome or the
    other's (what CORRO's negatives need), not their average (which neither task gives)."""
    torch.manual_seed(0)
    model = OutcomeCVAE(OBS, ACT, noise_dim=2, hidden=(64,))
    fit(model, [1.0, -1.0], 1500)
    anchors = linear_tasks([1.0], 400, seed=20_000)
    other = linear_tasks([-1.0], 400, seed=20_000)  # the same (s, a) under the other task
    drawn = outcome(model.sample(anchors))
    to_own = (drawn - outcome(anchors)).norm(dim=-1)
    to_other = (drawn - outcome(other)).norm(dim=-1)
    to_average = (drawn - (outcome(anchors) + outcome(other)) / 2).norm(dim=-1)
    gap = (outcome(anchors) - outcome(other)).norm(dim=-1)
    nearest = torch.minimum(to_own, to_other)
    assert (nearest < to_average).float().mean() > 0.8
    assert (nearest / gap).median() < 0.1
    share = (to_other < to_own).float().mean()
    assert 0.3 < share < 0.7  # both tasks' outcomes are drawn


def test_corro_model_negatives_share_the_anchors_state_and_action():
    ctx = random_context(3, 5, OBS, ACT, seed=0)
    corro = CORROInfoNCE(negatives=4, outcome="model", obs_dim=OBS, act_dim=ACT)
    made = corro.generate(ctx)
    assert torch.equal(made.obs, ctx.obs.repeat_interleave(4, 1))
    assert torch.equal(made.action, ctx.action.repeat_interleave(4, 1))
    assert made.next_obs.shape == (3, 20, OBS) and made.reward.shape == (3, 20)
    assert not torch.allclose(made.reward, ctx.reward.repeat_interleave(4, 1))


def test_corro_model_terms_train_the_model_and_the_encoder_apart():
    """The model learns from its own term only; the contrastive term reaches the encoder and
    never the model (its negatives are drawn without gradient)."""
    ctx = random_context(3, 5, OBS, ACT, seed=1)
    weight = torch.randn(2 * OBS + ACT + 1, 4, requires_grad=True)

    def encode(t: Transitions) -> torch.Tensor:
        return torch.cat([t.obs, t.action, t.next_obs, t.reward.unsqueeze(-1)], -1) @ weight

    corro = CORROInfoNCE(negatives=3, outcome="model", obs_dim=OBS, act_dim=ACT)
    query = encode(ctx)
    terms = corro(TaskEmbeddings(query, query.mean(1), torch.arange(3), context=ctx, encode=encode))
    assert {"loss_contrastive", "loss_outcome_model", "outcome_model_mse"} <= set(terms)
    terms["loss_contrastive"].backward(retain_graph=True)
    assert weight.grad is not None and weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in corro.model.parameters())
    weight.grad = None
    terms["loss_outcome_model"].backward()
    assert weight.grad is None
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in corro.model.parameters())


def test_corro_model_needs_the_sizes():
    with pytest.raises(RecipeError, match="obs_dim and act_dim"):
        CORROInfoNCE(outcome="model")
    with pytest.raises(RecipeError, match="'noise', 'relabel' or 'model'"):
        CORROInfoNCE(outcome="cvae")
