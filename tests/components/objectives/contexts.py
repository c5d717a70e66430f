"""Random context transitions [T, B, ·] for objectives that read the context."""

from __future__ import annotations

import torch

from components.transitions import Transitions


def random_context(t: int, b: int, obs_dim: int, act_dim: int, seed: int = 0) -> Transitions:
    g = torch.Generator().manual_seed(seed)
    zeros = torch.zeros(t, b)
    return Transitions(
        obs=torch.randn(t, b, obs_dim, generator=g),
        action=torch.randn(t, b, act_dim, generator=g),
        reward=torch.randn(t, b, generator=g),
        sparse_reward=zeros,
        next_obs=torch.randn(t, b, obs_dim, generator=g),
        terminated=zeros,
        truncated=zeros,
    )
