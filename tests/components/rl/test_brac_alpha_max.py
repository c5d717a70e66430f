"""BRAC's bound on the adapted α (`brac.alpha_max`): where the policy cannot come within the
target divergence of the data, dual ascent raises α every step; the bound stops it there, and
below the bound the update is the unbounded one, bit for bit."""

from __future__ import annotations

import pytest
import torch

from components.rl.brac import BRAC
from components.transitions import Transitions


def alphas(alpha_max: float | None, steps: int = 60) -> list[float]:
    torch.manual_seed(0)
    # a target no policy meets (a KL estimate below zero) makes α rise at every step
    agent = BRAC(obs_dim=3, act_dim=2, latent_dim=2, hidden=(16, 16), alpha=10.0,
                 target_divergence=-1.0, alpha_lr=0.05, alpha_max=alpha_max)  # fmt: skip
    obs = torch.randn(2, 32, 3)
    action = torch.rand(2, 32, 2).sign()  # the corners of the box: two modes per dimension
    zeros = torch.zeros(2, 32)
    batch = Transitions(obs=obs, action=action, reward=zeros, sparse_reward=zeros,
                        next_obs=obs, terminated=zeros, truncated=zeros)  # fmt: skip
    return [float(agent.update(batch, torch.zeros(2, 2))["alpha"]) for _ in range(steps)]


def test_alpha_stops_at_its_bound():
    free, bounded = alphas(None), alphas(20.0)
    assert free[-1] > 40.0  # unbounded, dual ascent has doubled it and more
    assert max(bounded) <= 20.0 * (1 + 1e-6)
    assert bounded[-1] == pytest.approx(20.0, rel=1e-6)


def test_below_the_bound_nothing_changes():
    assert alphas(None, steps=5) == alphas(1e6, steps=5)


def test_an_initial_alpha_above_the_bound_is_refused():
    with pytest.raises(ValueError, match=r"alpha \(30.0\) is above alpha_max \(20.0\)"):
        BRAC(obs_dim=3, act_dim=2, latent_dim=2, alpha=30.0, alpha_max=20.0)
