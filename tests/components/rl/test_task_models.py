"""Per-task reward and transition models: each learns its own task, and relabeling uses the
partner task's learned models."""

from __future__ import annotations

import torch

from components.rl.task_models import TaskModels
from components.transitions import Transitions

OBS, ACT = 2, 2


def task_batch(k: int, b: int, seed: int) -> Transitions:
    """Task i: reward = (i + 1) · a₀, dynamics s′ = s + (i + 1) · 0.1 · a."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(k, b, OBS, generator=g)
    action = torch.rand(k, b, ACT, generator=g) * 2 - 1
    scale = torch.arange(1, k + 1, dtype=torch.float32)[:, None]
    next_obs = obs + 0.1 * scale[..., None] * action
    reward = scale * action[..., 0]
    zeros = torch.zeros(k, b)
    return Transitions(obs, action, reward, reward, next_obs, zeros, zeros)


def test_relabeling_gives_the_partner_tasks_reward_and_dynamics():
    torch.manual_seed(0)
    models = TaskModels(n_tasks=3, obs_dim=OBS, act_dim=ACT, dynamics=True, hidden=(32,), lr=1e-2)
    for step in range(400):
        models.update(task_batch(3, 64, seed=step))
    data = task_batch(3, 256, seed=10_000)
    partner = torch.tensor([1, 2, 0])
    relabeled = models.relabel(data, partner)
    action = data.action
    for row, task in enumerate(partner.tolist()):
        want_reward = (task + 1) * action[row, :, 0]
        want_next = data.obs[row] + 0.1 * (task + 1) * action[row]
        assert float((relabeled.reward[row] - want_reward).abs().mean()) < 0.1
        assert float((relabeled.next_obs[row] - want_next).abs().mean()) < 0.03
        # and not the row's own task's reward
        own = (row + 1) * action[row, :, 0]
        assert float((relabeled.reward[row] - own).abs().mean()) > 0.3
    torch.testing.assert_close(relabeled.obs, data.obs)
    torch.testing.assert_close(relabeled.action, data.action)


def test_without_dynamics_the_transitions_keep_their_next_states():
    models = TaskModels(n_tasks=3, obs_dim=OBS, act_dim=ACT, dynamics=False, hidden=(8,))
    assert models.transition is None
    data = task_batch(3, 16, seed=7)
    relabeled = models.relabel(data, torch.tensor([2, 0, 1]))
    torch.testing.assert_close(relabeled.next_obs, data.next_obs)
    predicted = models.predict_reward(data.obs, data.action, data.next_obs, torch.tensor([2, 0, 1]))
    torch.testing.assert_close(relabeled.reward, predicted)
