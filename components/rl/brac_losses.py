"""The losses of BRAC on a SAC-v1 actor-critic, one module each, in the order an update uses them.

Each takes the networks it reads as arguments (it owns none, so a checkpoint holds every weight
once, in the agent) and returns named terms: the `loss_*` its optimiser minimises, then
diagnostics. x = (s, z) and x′ = (s′, z) are a meta-batch's states with their task vectors
[T, B, F + Z]; every network acts on the last dimension.

    Q:      (Q_i(x, a) − y)², y = scale·r + γ(1 − d)·V̄(x′)                     (twin, summed)
    V:      (V(x) − [min_i Q_i(x, ã) − log π(ã|x) − α·D̂(x)])²    ã ~ π(·|x)    (D̂ only with
                                                                              the value penalty)
    π:      log π(ã|x) − min_i Q_i(x, ã) + α·D̂(x) + L2(mean, log-std)
    α:      log α · (D_target − D̂)                                       (when α adapts)

D̂ is the dual KL estimate of `components/rl/divergence.py` (Wu, Tucker & Nachum 2019), whose
critic has its own loss there.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from components.rl.networks import PolicySample
from components.seeds import per_row, per_seed_mean, seed_count
from components.transitions import Transitions

Twin = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x, a) -> [2, ...]


class QLoss(nn.Module):
    """Twin Q regression to the soft Bellman target through the target value network."""

    def __init__(self, *, discount: float, reward_scale: float):
        super().__init__()
        self.discount, self.reward_scale = discount, reward_scale

    def forward(self, q_values: Twin, v_target: nn.Module, x, batch: Transitions, x_next):
        with torch.no_grad():
            v_next = v_target(x_next).squeeze(-1)
            target = (
                self.reward_scale * batch.reward + self.discount * (1.0 - batch.terminated) * v_next
            )
        q = q_values(x, batch.action)  # [2, T, B]
        seeds = seed_count(self)
        if seeds == 1:
            return {
                "loss_q": ((q - target) ** 2).mean(dim=(1, 2)).sum(),
                "q_mean": q.mean().detach(),
            }
        # seed-batched: [2, K·T, B] -> each seed's mean per twin, summed over the twins
        squared = ((q - target) ** 2).reshape(2, seeds, -1)
        return {
            "loss_q": squared.mean(-1).sum(0),
            "q_mean": q.detach().reshape(2, seeds, -1).mean((0, 2)),
        }


class ValueLoss(nn.Module):
    """V regressed to the soft value of a fresh policy action (minus α·D̂ with the penalty)."""

    def __init__(self, *, value_penalty: bool):
        super().__init__()
        self.value_penalty = value_penalty

    def forward(self, v: nn.Module, x, q_new, log_prob, alpha, divergence):
        target = q_new - log_prob
        if self.value_penalty:
            target = target - per_row(alpha, divergence) * divergence
        error = (v(x).squeeze(-1) - target.detach()) ** 2
        return {"loss_v": per_seed_mean(error, seed_count(self))}


class PolicyLoss(nn.Module):
    """The policy's soft, behaviour-regularised loss, plus small L2 on its mean and log-std,
    and with `bc_weight` > 0 a behaviour-cloning term: the squared distance of the policy's
    deterministic action tanh(mean) to the data's action (TD3+BC's regulariser)."""

    def __init__(self, *, mean_reg: float, std_reg: float, bc_weight: float = 0.0):
        super().__init__()
        self.mean_reg, self.std_reg, self.bc_weight = mean_reg, std_reg, bc_weight

    def forward(self, sample: PolicySample, q_new, alpha, divergence, data_action=None):
        seeds = seed_count(self)

        def mean(t: torch.Tensor) -> torch.Tensor:  # per seed in a seed-batched step
            return per_seed_mean(t, seeds)

        regulariser = self.mean_reg * mean(sample.mean**2) + self.std_reg * mean(sample.log_std**2)
        loss = mean(sample.log_prob - q_new + per_row(alpha, divergence) * divergence) + regulariser
        terms = {"log_prob": mean(sample.log_prob).detach()}
        if self.bc_weight > 0:
            error = mean(((torch.tanh(sample.mean) - data_action) ** 2).sum(-1))
            loss = loss + self.bc_weight * error
            terms["bc_error"] = error.detach()
        return {"loss_policy": loss, **terms}


class AlphaLoss(nn.Module):
    """Dual ascent on log α toward the target divergence."""

    def __init__(self, *, target_divergence: float):
        super().__init__()
        self.target_divergence = target_divergence

    def forward(self, log_alpha: torch.Tensor, divergence):
        achieved = per_seed_mean(divergence, seed_count(self)).detach()
        return {"loss_alpha": log_alpha * (self.target_divergence - achieved)}
