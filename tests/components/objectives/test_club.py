"""CLUB (CSRO's mutual-information bound) in closed form, its two gradients, and the sum of
objectives that pairs it with FOCAL's metric loss."""

from __future__ import annotations

import pytest
import torch

from components.objectives.club import CLUB, club_bound
from components.objectives.combined import Objectives
from components.objectives.dml import FocalDML
from components.objectives.embeddings import TaskEmbeddings
from registry import RecipeError
from tests.components.objectives.contexts import random_context


def test_a_perfect_q_bounds_by_the_within_batch_variance():
    z = torch.randn(3, 50, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    # q(z|x) = N(z, 1): mean_{i,j} (z_j − z_i)² / 2 = Var_j(z) per dimension, summed
    bound = club_bound(z, z, torch.ones_like(z))
    assert torch.allclose(bound, z.var(1, unbiased=False).sum(-1))


def test_an_uninformative_q_bounds_by_zero():
    g = torch.Generator().manual_seed(2)
    z = torch.randn(4, 30, 3, generator=g, dtype=torch.float64)
    mu = torch.randn(4, 1, 3, generator=g, dtype=torch.float64).expand_as(z)  # ignores x
    var = torch.rand(4, 1, 3, generator=g, dtype=torch.float64).add(0.3).expand_as(z)
    assert torch.allclose(club_bound(z, mu, var), torch.zeros(4, dtype=torch.float64))


def test_the_encoder_term_leaves_q_alone_and_q_learns_from_detached_z():
    club = CLUB(obs_dim=3, act_dim=2, latent_dim=4, hidden=(8,))
    query = torch.randn(2, 5, 4, requires_grad=True)
    emb = TaskEmbeddings(query, query.mean(1), torch.arange(2), context=random_context(2, 5, 3, 2))
    terms = club(emb)
    q_params = list(club.parameters())
    encoder_side = torch.autograd.grad(terms["loss_club"], [query, *q_params], allow_unused=True)
    assert encoder_side[0] is not None and all(g is None for g in encoder_side[1:])
    estimator = torch.autograd.grad(
        terms["loss_club_estimator"], [query, *q_params], allow_unused=True
    )
    assert estimator[0] is None and all(g is not None for g in estimator[1:])


@pytest.mark.parametrize("depends", [True, False])
def test_a_trained_q_detects_embeddings_that_carry_the_behaviour(depends):
    """q fitted on one draw, the bound read on a fresh one: z = a linear map of (s, a) gives
    about Var(z) > 0; z drawn apart from (s, a) gives about 0."""
    torch.manual_seed(0)
    weight = torch.randn(5, 2) * 0.5

    def draw(seed: int) -> TaskEmbeddings:
        ctx = random_context(4, 64, 3, 2, seed=seed)
        x = torch.cat([ctx.obs, ctx.action], -1)
        z = x @ weight if depends else torch.randn(4, 64, 2) * 0.5
        return TaskEmbeddings(z, z.mean(1), torch.arange(4), context=ctx)

    club = CLUB(obs_dim=3, act_dim=2, latent_dim=2, hidden=(32,))
    opt = torch.optim.Adam(club.parameters(), lr=1e-2)
    fit = draw(3)
    for _ in range(300):
        opt.zero_grad()
        club(fit)["loss_club_estimator"].backward()
        opt.step()
    fresh = draw(4)
    bound = float(club(fresh)["club_bound"])
    variance = float(fresh.query.var(1, unbiased=False).sum(-1).mean())
    if depends:
        assert bound > 0.5 * variance
    else:
        assert abs(bound) < 0.2 * variance


def test_club_without_context_is_a_recipe_error():
    club = CLUB(obs_dim=3, act_dim=2, latent_dim=4)
    query = torch.randn(2, 5, 4)
    with pytest.raises(RecipeError, match="needs the context transitions"):
        club(TaskEmbeddings(query, query.mean(1), torch.arange(2)))


def test_objectives_add_their_parts_terms():
    torch.manual_seed(0)
    query = torch.randn(4, 5, 4, requires_grad=True)
    emb = TaskEmbeddings(
        query, query.mean(1), torch.tensor([0, 1, 0, 1]), context=random_context(4, 5, 3, 2)
    )
    both = Objectives(obs_dim=3, act_dim=2, latent_dim=4, n_tasks=2, parts=[FocalDML, CLUB])
    terms = both(emb)
    assert set(terms) >= {"loss_dml", "loss_club", "loss_club_estimator", "dml_positive"}
    alone = {**FocalDML()(emb), **both.parts[1](emb)}
    assert all(torch.equal(terms[k], alone[k]) for k in alone)
    with pytest.raises(RecipeError, match="two parts return a term named 'loss_dml'"):
        Objectives(obs_dim=3, act_dim=2, latent_dim=4, n_tasks=2, parts=[FocalDML, FocalDML])(emb)
    with pytest.raises(RecipeError, match="at least two objectives"):
        Objectives(obs_dim=3, act_dim=2, latent_dim=4, n_tasks=2, parts=[FocalDML])
