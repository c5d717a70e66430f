"""The dual KL divergence critic of BRAC (Wu, Tucker & Nachum 2019, "Behavior Regularized
Offline Reinforcement Learning"), conditioned on the task vector.

KL(π ‖ β) ≥ E_π[c(s, a)] − E_β[exp(c(s, a) − 1)] for every function c (the Fenchel dual of
f(t) = t log t). The critic c maximises the right side over data actions (β) and policy actions
(π); the policy then minimises the estimate through its own actions.
"""

from __future__ import annotations

import torch
from torch import nn

from components.rl.networks import MLP
from components.seeds import per_seed_mean, seed_count
from components.seeds.streams import rand
from registry import register
from registry.constraints import NonNegativeFloat, Widths

PENALTIES = ("action_gradient", "value")


@register("divergence", "dual_kl_critic")
class DualKLCritic(nn.Module):
    """c(s, a, z): inputs [..., F + A] (state and task vector, then action) -> [...].

    Args:
        in_features: size of (state, task vector).
        act_dim: A.
        hidden: hidden sizes.
        penalty: "action_gradient" (BRAC's: one-sided penalty on ‖∇_a c‖ at actions
            interpolated between data and policy actions) or "value" (FOCAL's reference code,
            which penalised c's value at those actions instead).
        penalty_weight: λ of the penalty (BRAC: 5).
    """

    seed_batching = True  # components/seeds: per-seed estimate and penalty draws

    def __init__(
        self,
        *,
        in_features: int,
        act_dim: int,
        hidden: Widths = (256, 256, 256),
        penalty: str = "action_gradient",
        penalty_weight: NonNegativeFloat = 5.0,
    ):
        super().__init__()
        if penalty not in PENALTIES:
            raise ValueError(f"dual_kl_critic.penalty must be one of {PENALTIES}, got {penalty!r}")
        self.net = MLP(in_features=in_features + act_dim, out_features=1, hidden=hidden)
        self.penalty, self.penalty_weight = penalty, penalty_weight

    def forward(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, action], -1)).squeeze(-1)

    def estimate(self, x: torch.Tensor, data_action: torch.Tensor, policy_action: torch.Tensor):
        """Per-state dual estimate of KL(π ‖ β) [...]: c(s, a_π) − exp(c(s, a_β) − 1)."""
        return self(x, policy_action) - torch.exp(self(x, data_action) - 1.0)

    def loss(
        self, x: torch.Tensor, data_action: torch.Tensor, policy_action: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The critic's loss: −(dual estimate) + λ·penalty; policy actions must be detached."""
        estimate = per_seed_mean(self.estimate(x, data_action, policy_action), seed_count(self))
        return {
            "loss_divergence_critic": -estimate
            + self.penalty_weight * self.penalty_term(x, data_action, policy_action),
            "divergence_estimate": estimate.detach(),
        }

    def penalty_term(
        self, x: torch.Tensor, data_action: torch.Tensor, policy_action: torch.Tensor
    ) -> torch.Tensor:
        mix = rand(*data_action.shape[:-1], 1, device=data_action.device)
        between = (data_action + mix * (policy_action - data_action)).detach().requires_grad_()
        value = self(x, between)
        if self.penalty == "value":  # the reference's slip: |c| where ‖∇_a c‖ belongs
            slope = value.abs()
        else:
            (grad,) = torch.autograd.grad(value.sum(), between, create_graph=True)
            slope = torch.sqrt((grad**2).sum(-1) + 1e-10)
        return per_seed_mean(torch.relu(slope - 1.0) ** 2, seed_count(self))
