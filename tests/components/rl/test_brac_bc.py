"""BRAC's behaviour-cloning term (`brac.bc_weight`): the policy's deterministic action is
pulled to the data's actions, which FOCAL's BRAC alone learns slowly where Q says little."""

from __future__ import annotations

import torch

from components.rl.brac import BRAC
from components.transitions import Transitions


def imitation_error(bc_weight: float) -> tuple[float, dict]:
    torch.manual_seed(0)
    agent = BRAC(obs_dim=3, act_dim=2, latent_dim=2, hidden=(32, 32), lr=1e-3, bc_weight=bc_weight)
    obs = torch.randn(4, 64, 3)
    action = torch.tanh(obs[..., :2] * 2)  # the data's policy: a function of the state
    zeros = torch.zeros(4, 64)
    batch = Transitions(obs=obs, action=action, reward=zeros, sparse_reward=zeros,
                        next_obs=obs, terminated=zeros, truncated=zeros)  # fmt: skip
    z = torch.zeros(4, 2)
    for _ in range(300):
        terms = agent.update(batch, z)
    with torch.no_grad():
        acted = agent.act(obs, z[:, None].expand(-1, 64, -1))
        return float(((acted - action) ** 2).mean()), terms


def test_bc_weight_makes_the_policy_imitate_the_data():
    cloned, terms = imitation_error(10.0)
    plain, plain_terms = imitation_error(0.0)
    assert cloned < 0.25 * plain
    assert "bc_error" in terms and "bc_error" not in plain_terms
