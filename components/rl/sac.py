"""Behaviour policies: K independent soft actor-critics (one per task) trained as one model.

SAC with twin Q functions, Polyak-averaged target critics and a learned temperature per task
(Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"). Every network holds K
weight sets (`BatchedMLP`); tensors are shaped [K, B, ...]. Each task's losses are summed over
tasks, so each task's weights get exactly the gradient of its own loss.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from components.rl.batched_mlp import BatchedMLP
from components.transitions import Transitions
from registry import register
from registry.constraints import Fraction, PositiveFloat, Widths

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


@register("behaviour_learner", "task_batched_sac")
class TaskBatchedSAC(nn.Module):
    """K soft actor-critics in lockstep: act on obs [K, N, F], update on batches [K, B, ...].

    Args:
        n_tasks: K, one agent per task.
        obs_dim, act_dim: observation and action sizes (actions live in [−1, 1]).
        hidden: hidden sizes of actor and critics.
        lr: Adam learning rate of actor, critics and temperature.
        discount: γ.
        tau: Polyak rate of the target critics.
        init_temperature: initial α.
        target_entropy: entropy the temperature steers to (default −act_dim).
        reward_scale: multiplies rewards in the critic target.
    """

    def __init__(
        self,
        *,
        n_tasks: int,
        obs_dim: int,
        act_dim: int,
        hidden: Widths = (64, 64),
        lr: PositiveFloat = 3e-3,
        discount: Fraction = 0.9,
        tau: Fraction = 0.01,
        init_temperature: PositiveFloat = 0.1,
        target_entropy: float | None = None,
        reward_scale: PositiveFloat = 1.0,
    ):
        super().__init__()
        self.n_tasks, self.act_dim = n_tasks, act_dim
        self.discount, self.tau, self.reward_scale = discount, tau, reward_scale
        self.target_entropy = -float(act_dim) if target_entropy is None else target_entropy
        models, width = self.network_layout(n_tasks, obs_dim)
        mlp = dict(hidden=hidden)
        self.actor = BatchedMLP(n_models=models, in_features=width, out_features=2 * act_dim, **mlp)
        # Twin critics as one batched module of 2K models: inputs are repeated, outputs split.
        self.critic = BatchedMLP(
            n_models=2 * models, in_features=width + act_dim, out_features=1, **mlp
        )
        self.critic_target = BatchedMLP(
            n_models=2 * models, in_features=width + act_dim, out_features=1, **mlp
        )
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.full((n_tasks, 1), math.log(init_temperature)))
        # fused: one kernel per parameter instead of a dozen (CPU and CUDA, torch >= 2.4)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=lr, fused=True)

    def network_layout(self, n_tasks: int, obs_dim: int) -> tuple[int, int]:
        """(models per network, input width before the action): one model per task, reading
        the observation."""
        return n_tasks, obs_dim

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor": self.actor_opt, "critic": self.critic_opt, "alpha": self.alpha_opt}

    def training_state(self) -> dict:
        """Networks, temperature and optimisers: all a stopped training needs to go on."""
        return {
            "modules": self.state_dict(),
            "optimizers": {k: o.state_dict() for k, o in self.optimizers().items()},
        }

    def load_training_state(self, state: dict) -> None:
        self.load_state_dict(state["modules"])
        for name, opt in self.optimizers().items():
            opt.load_state_dict(state["optimizers"][name])

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate of every optimiser (for schedules run by the caller)."""
        for opt in self.optimizers().values():
            for group in opt.param_groups:
                group["lr"] = lr

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sampled action [K, B, A], its log-probability [K, B], and the mean action [K, B, A]."""
        mean, log_std = self.actor_output(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        pre_tanh = mean + log_std.exp() * torch.randn_like(mean)
        action = torch.tanh(pre_tanh)
        gaussian = -0.5 * (
            ((pre_tanh - mean) / log_std.exp()) ** 2 + 2 * log_std + math.log(2 * math.pi)
        )
        # log|d tanh(u)/du| = 2·(log 2 − u − softplus(−2u)), numerically stable
        squash = 2.0 * (math.log(2.0) - pre_tanh - F.softplus(-2.0 * pre_tanh))
        return action, (gaussian - squash).sum(-1), torch.tanh(mean)

    def actor_output(self, obs: torch.Tensor) -> torch.Tensor:
        """The actor's mean and log-std, [K, B, 2A], for observations [K, B, F]."""
        return self.actor(obs)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, *, deterministic: bool = False) -> torch.Tensor:
        """Actions [K, N, A] for observations [K, N, F]."""
        action, _, mean = self.policy(obs)
        return mean if deterministic else action

    def q_values(self, net: BatchedMLP, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Twin Q values [2, K, B] for obs [K, B, F] and action [K, B, A]."""
        x = torch.cat([obs, action], dim=-1).repeat(2, 1, 1)  # [2K, B, F+A]
        return net(x).squeeze(-1).unflatten(0, (2, self.n_tasks))

    def critic_loss(self, batch: Transitions) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        with torch.no_grad():
            next_action, next_logp, _ = self.policy(batch.next_obs)
            next_q = self.q_values(self.critic_target, batch.next_obs, next_action).min(0).values
            alpha = self.log_alpha.exp()
            soft_value = next_q - alpha * next_logp
            target = (
                self.reward_scale * batch.reward
                + self.discount * (1 - batch.terminated) * soft_value
            )
        q = self.q_values(self.critic, batch.obs, batch.action)
        loss = ((q - target) ** 2).mean(-1).sum()  # mean over B, sum over twins and tasks
        return loss, {"q_mean": q.mean().detach()}

    def actor_and_alpha_losses(self, batch: Transitions) -> dict[str, torch.Tensor]:
        action, logp, _ = self.policy(batch.obs)
        self.critic.requires_grad_(False)  # gradients flow through Q to the action only
        q = self.q_values(self.critic, batch.obs, action).min(0).values
        self.critic.requires_grad_(True)
        alpha = self.log_alpha.exp()
        actor = (alpha.detach() * logp - q).mean(-1).sum()
        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean(-1).sum()
        return {"loss_actor": actor, "loss_alpha": alpha_loss, "entropy": -logp.mean().detach()}

    def update(self, batch: Transitions) -> dict[str, torch.Tensor]:
        """One gradient step of critics, actor and temperature, then the target update."""
        loss_critic, info = self.critic_loss(batch)
        self.critic_opt.zero_grad(set_to_none=True)
        loss_critic.backward()
        self.critic_opt.step()

        losses = self.actor_and_alpha_losses(batch)
        self.actor_opt.zero_grad(set_to_none=True)
        self.alpha_opt.zero_grad(set_to_none=True)
        (losses["loss_actor"] + losses["loss_alpha"]).backward()  # disjoint parameters
        self.actor_opt.step()
        self.alpha_opt.step()

        with torch.no_grad():
            for target, online in zip(
                self.critic_target.parameters(), self.critic.parameters(), strict=True
            ):
                target.lerp_(online, self.tau)
        return {
            "loss_critic": loss_critic.detach(),
            **{k: v.detach() for k, v in losses.items()},
            **info,
        }


@register("behaviour_learner", "task_conditioned_sac")
class TaskConditionedSAC(TaskBatchedSAC):
    """One soft actor-critic for all K tasks, told the task: its networks read (s, features of
    the task) and learn from every task's transitions at once (multi-task SAC).

    Where K tasks are alike (target velocities, body parameters) one network shared by all of
    them learns each far sooner than K independent ones learn theirs, at a K-th of the
    arithmetic per step — what lets a MuJoCo family's behaviour policies approach expert returns
    on a CPU (docs/DATASETS.md). Task k's behaviour policy is the network conditioned on task
    k's features. Same interface, shapes and losses as `TaskBatchedSAC` (each task's loss
    summed, a temperature per task); only the networks are shared.

    Args:
        task_features: [K, P] what each task's networks are told; default the one-hot task
            index. Give features that vary smoothly between tasks (standardised task
            parameters) so that what is learnt for one task carries to its neighbours.
        shared: one network for all K (training); False gives each task its own copy (to
            replay tasks' policies from different checkpoints side by side,
            `components/data/policies.py`).
        others: as `TaskBatchedSAC`.
    """

    def __init__(
        self,
        *,
        n_tasks: int,
        obs_dim: int,
        act_dim: int,
        task_features=None,
        shared: bool = True,
        **kwargs,
    ):
        features = torch.eye(n_tasks) if task_features is None else torch.as_tensor(task_features)
        if features.ndim != 2 or len(features) != n_tasks:
            raise ValueError(
                f"task_features must be [n_tasks = {n_tasks}, P], got {tuple(features.shape)}"
            )
        self.shared, self.n_features = shared, features.shape[1]  # read by network_layout
        super().__init__(n_tasks=n_tasks, obs_dim=obs_dim, act_dim=act_dim, **kwargs)
        self.register_buffer("task_features", features.to(torch.float32))

    def network_layout(self, n_tasks: int, obs_dim: int) -> tuple[int, int]:
        """One model for all tasks (or, not shared, a copy per task) reading (s, features)."""
        return (1 if self.shared else n_tasks), obs_dim + self.n_features

    def _told(self, x: torch.Tensor) -> torch.Tensor:
        """[K, B, ·] -> with each task's features appended: [1, K·B, ·] shared, else [K, B, ·]."""
        k, b, _ = x.shape
        told = torch.cat([x, self.task_features[:, None, :].expand(k, b, -1)], -1)
        return told.reshape(1, k * b, -1) if self.shared else told

    def actor_output(self, obs: torch.Tensor) -> torch.Tensor:
        k, b, _ = obs.shape
        return self.actor(self._told(obs)).reshape(k, b, -1)

    def q_values(self, net: BatchedMLP, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        k, b, _ = obs.shape
        x = self._told(torch.cat([obs, action], -1))  # (s, a, features)
        return net(x.repeat(2, 1, 1)).reshape(2, k, b)
