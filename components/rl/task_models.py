"""Per-task learned reward and transition models, trained together with batched weights.

MBML relabels one task's transitions as if another task had produced them: the other task's
reward model scores (s, a, s′), and where tasks differ in dynamics its transition model first
predicts s′ (as s + Δ). K tasks' models are K independent MLPs evaluated at once.
"""

from __future__ import annotations

import torch
from torch import nn

from components.rl.batched_mlp import BatchedMLP
from components.transitions import Transitions
from registry import register
from registry.constraints import PositiveFloat, Widths


@register("network", "task_models")
class TaskModels(nn.Module):
    """K reward models r(s, a, s′) and, with `dynamics`, K transition models s′ = s + Δ(s, a).

    Args:
        n_tasks: K.
        obs_dim, act_dim: sizes.
        dynamics: learn transition models too (families whose tasks differ in dynamics).
        hidden: hidden sizes of every model.
        lr: Adam learning rate.
    """

    def __init__(
        self,
        *,
        n_tasks: int,
        obs_dim: int,
        act_dim: int,
        dynamics: bool,
        hidden: Widths = (64, 64),
        lr: PositiveFloat = 1e-3,
    ):
        super().__init__()
        hidden = tuple(hidden)
        self.reward = BatchedMLP(
            n_models=n_tasks, in_features=2 * obs_dim + act_dim, out_features=1, hidden=hidden
        )
        self.transition = (
            BatchedMLP(
                n_models=n_tasks, in_features=obs_dim + act_dim, out_features=obs_dim, hidden=hidden
            )
            if dynamics
            else None
        )
        self.opt = torch.optim.Adam(self.parameters(), lr=lr)

    def predict_next(
        self, obs: torch.Tensor, action: torch.Tensor, models: torch.Tensor | None = None
    ) -> torch.Tensor:
        return obs + self.transition(torch.cat([obs, action], -1), models)

    def predict_reward(
        self,
        obs: torch.Tensor,
        action: torch.Tensor,
        next_obs: torch.Tensor,
        models: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.reward(torch.cat([obs, action, next_obs], -1), models).squeeze(-1)

    def update(self, batch: Transitions) -> dict[str, torch.Tensor]:
        """One step on every task's own batch [K, B, ·]; `batch.reward` is the target (the
        reward the context shows: sparse on sparse families)."""
        predicted = self.predict_reward(batch.obs, batch.action, batch.next_obs)
        loss = ((predicted - batch.reward) ** 2).mean()
        info = {"loss_reward_model": loss.detach()}
        if self.transition is not None:
            loss_next = ((self.predict_next(batch.obs, batch.action) - batch.next_obs) ** 2).mean()
            info["loss_transition_model"] = loss_next.detach()
            loss = loss + loss_next
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return info

    @torch.no_grad()
    def relabel(self, batch: Transitions, models: torch.Tensor) -> Transitions:
        """Row i of `batch` [M, B, ·] as task `models[i]` would have produced it: s′ from that
        task's transition model (when learned), then its predicted reward in `reward`."""
        next_obs = batch.next_obs
        if self.transition is not None:
            next_obs = self.predict_next(batch.obs, batch.action, models)
        reward = self.predict_reward(batch.obs, batch.action, next_obs, models)
        return Transitions(
            obs=batch.obs,
            action=batch.action,
            reward=reward,
            sparse_reward=reward,
            next_obs=next_obs,
            terminated=batch.terminated,
            truncated=batch.truncated,
        )
