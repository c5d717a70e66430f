"""IQL (Kostrikov, Nair & Levine 2022) conditioned on a task vector: the offline learner the field
now puts under context methods, beside FOCAL's BRAC.

Implicit Q-learning never evaluates an action the data does not hold. x = (s, z), x′ = (s′, z):

    V:  L_τ(min_i Q̄_i(x, a) − V(x)),  L_τ(u) = |τ − 1(u < 0)|·u²      (expectile regression)
    π:  −exp(β·(min_i Q̄_i(x, a) − V(x)))·log π(a|x), the weight clipped at 100    (AWR)
    Q:  (Q_i(x, a) − [scale·r + γ(1 − d)·V(x′)])²                         (twin, summed)

in that order (the official implementation's: V, then the actor with the new V, then Q with the
new V(x′), then the Polyak target of Q), with a its own Gaussian policy: mean tanh(μ(x)),
log σ(x) mapped into [−5, 2] by a tanh, not squashed (the multi-method offline meta-RL code base's
form; the official one keeps log σ a free vector, docs/DECISIONS.md §6). It acts with the mean.
Every network acts on the last dimension, so a meta-batch [T, B, ...] is one call.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from components.profiling import part
from components.rl.batched_mlp import BatchedMLP, twin_q
from components.rl.networks import MLP
from components.rl.steps import step
from components.seeds import per_seed_mean, seed_count
from components.transitions import Transitions
from registry import register
from registry.constraints import Fraction, NonNegativeFloat, PositiveFloat, Widths

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
WEIGHT_MAX = 100.0  # the clip on exp(β·A) of every public IQL implementation


def expectile_loss(u: torch.Tensor, expectile: float) -> torch.Tensor:
    """L_τ(u) = |τ − 1(u < 0)|·u² elementwise: τ weighs the errors where Q lies above V."""
    return torch.where(u < 0, 1.0 - expectile, expectile) * u**2


class ValueLoss(nn.Module):
    """V toward an upper expectile of the target critics' Q at the data's actions."""

    def __init__(self, *, expectile: float):
        super().__init__()
        self.expectile = expectile

    def forward(self, v: nn.Module, x: torch.Tensor, q_data: torch.Tensor):
        value = v(x).squeeze(-1)
        error, seeds = expectile_loss(q_data - value, self.expectile), seed_count(self)
        return {
            "loss_v": per_seed_mean(error, seeds),
            "v_mean": per_seed_mean(value, seeds).detach(),
        }


class AdvantageWeightedLoss(nn.Module):
    """The policy's advantage-weighted log-likelihood of the data's actions."""

    def __init__(self, *, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, log_prob: torch.Tensor, advantage: torch.Tensor):
        weight = torch.exp(self.temperature * advantage.detach()).clamp(max=WEIGHT_MAX)
        seeds = seed_count(self)
        return {
            "loss_policy": per_seed_mean(-weight * log_prob, seeds),
            "advantage_weight": per_seed_mean(weight, seeds).detach(),
        }


class QLoss(nn.Module):
    """Twin Q regression to r + γ(1 − d)·V(x′): the target uses V, never a policy action."""

    def __init__(self, *, discount: float, reward_scale: float):
        super().__init__()
        self.discount, self.reward_scale = discount, reward_scale

    def forward(self, q: torch.Tensor, v_next: torch.Tensor, batch: Transitions):
        target = self.reward_scale * batch.reward + self.discount * (1.0 - batch.terminated) * (
            v_next.detach()
        )
        squared = (q - target) ** 2  # [2, T, B]
        seeds = seed_count(self)
        if seeds == 1:
            return {"loss_q": squared.mean(dim=(1, 2)).sum(), "q_mean": q.mean().detach()}
        return {  # seed-batched: each seed's mean per twin, summed over the twins
            "loss_q": squared.reshape(2, seeds, -1).mean(-1).sum(0),
            "q_mean": q.detach().reshape(2, seeds, -1).mean((0, 2)),
        }


class GaussianPolicy(nn.Module):
    """π(a | x) = N(tanh μ(x), σ(x)²), log σ = tanh-mapped into [−5, 2]; acts with tanh μ."""

    seed_batching = True  # components/seeds: an MLP on the last dimension, no random draw

    def __init__(self, *, in_features: int, act_dim: int, hidden: Widths = (256, 256)):
        super().__init__()
        self.net = MLP(in_features=in_features, out_features=2 * act_dim, hidden=hidden)

    def log_prob(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """log π(action | x) summed over the action's dimensions, [...]."""
        mean, log_std = self._mean_log_std(x)
        z = (action - mean) / log_std.exp()
        return (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def _mean_log_std(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw = self.net(x).chunk(2, dim=-1)
        span = LOG_STD_MAX - LOG_STD_MIN
        return torch.tanh(mean), LOG_STD_MIN + 0.5 * span * (torch.tanh(raw) + 1.0)

    @torch.no_grad()
    def deterministic(self, x: torch.Tensor) -> torch.Tensor:
        return self._mean_log_std(x)[0]


@register("agent", "iql")
class IQL(nn.Module):
    """Twin Q and its Polyak target, V and a Gaussian policy over (s, z), trained by IQL.

    Args:
        obs_dim, act_dim, latent_dim: sizes (set by the algorithm).
        hidden: hidden sizes of policy, Q and V (IQL: 2 × 256).
        lr: Adam learning rate of policy, Q and V (IQL: 3e-4).
        discount: γ (IQL: 0.99; the environment columns' own where a recipe binds it).
        tau: Polyak rate of the target Q (IQL: 0.005).
        expectile: τ of the value's expectile loss (IQL's MuJoCo setting: 0.7).
        temperature: β, the inverse temperature of the advantage weight (IQL: 3.0).
        reward_scale: multiplies rewards (1: IQL's; the point robots' columns use 100 for BRAC).
        layer_norm: LayerNorm (without affine parameters) in every hidden layer of Q and V,
            the critics (the LayerNorm variants of the IQL meta-RL code base).

    Example (one update on a meta-batch of 4 tasks × 8 transitions, then acting):
        >>> import torch
        >>> from components.transitions import Transitions
        >>> agent = IQL(obs_dim=2, act_dim=2, latent_dim=5, hidden=(16, 16))
        >>> b = dict(obs=torch.randn(4, 8, 2), action=torch.rand(4, 8, 2) * 2 - 1)
        >>> b |= dict(reward=torch.randn(4, 8), next_obs=torch.randn(4, 8, 2))
        >>> zeros = torch.zeros(4, 8)
        >>> batch = Transitions(**b, sparse_reward=zeros, terminated=zeros, truncated=zeros)
        >>> sorted(k for k in agent.update(batch, torch.zeros(4, 5)) if k.startswith("loss_"))
        ['loss_policy', 'loss_q', 'loss_v']
        >>> tuple(agent.act(batch.obs, torch.zeros(4, 8, 5)).shape)
        (4, 8, 2)
    """

    seed_batching = True  # components/seeds: per-seed losses, networks on the last dimension

    def __init__(
        self,
        *,
        obs_dim: int,
        act_dim: int,
        latent_dim: int,
        hidden: Widths = (256, 256),
        lr: PositiveFloat = 3e-4,
        discount: Fraction = 0.99,
        tau: Fraction = 0.005,
        expectile: Fraction = 0.7,
        temperature: NonNegativeFloat = 3.0,
        reward_scale: PositiveFloat = 1.0,
        layer_norm: bool = False,
    ):
        super().__init__()
        x_dim, hidden = obs_dim + latent_dim, tuple(hidden)
        self.tau = tau
        self.policy = GaussianPolicy(in_features=x_dim, act_dim=act_dim, hidden=hidden)
        # Twin Q as one batched module of two models: one matmul per layer for both.
        critic = dict(hidden=hidden, layer_norm=layer_norm)
        self.q = BatchedMLP(n_models=2, in_features=x_dim + act_dim, out_features=1, **critic)
        self.q_target = BatchedMLP(
            n_models=2, in_features=x_dim + act_dim, out_features=1, **critic
        )
        self.q_target.load_state_dict(self.q.state_dict())
        self.q_target.requires_grad_(False)
        self.v = MLP(in_features=x_dim, out_features=1, **critic)
        self.value_loss = ValueLoss(expectile=expectile)
        self.policy_loss = AdvantageWeightedLoss(temperature=temperature)
        self.q_loss = QLoss(discount=discount, reward_scale=reward_scale)
        self.policy_opt = torch.optim.Adam(self.policy.parameters(), lr=lr, fused=True)
        self.q_opt = torch.optim.Adam(self.q.parameters(), lr=lr, fused=True)
        self.v_opt = torch.optim.Adam(self.v.parameters(), lr=lr, fused=True)

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Every optimiser, by name (a checkpoint saves their states beside the weights)."""
        return {"policy": self.policy_opt, "q": self.q_opt, "v": self.v_opt}

    @torch.no_grad()
    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Deterministic actions (the policy's mean, in [−1, 1]) [..., A]."""
        return self.policy.deterministic(torch.cat([obs, z], -1))

    def update(self, batch: Transitions, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """One gradient step on a meta-batch: batch fields [T, B, ...] (dense reward), z [T, Z].

        V, the policy, then Q, then the target Q. If z requires grad, the Q loss alone
        back-propagates into it (as BRAC's); V and the policy read z detached.
        """
        zb = z[:, None, :].expand(-1, batch.obs.shape[1], -1)  # [T, B, Z]
        x_q = torch.cat([batch.obs, zb], -1)  # carries z's gradient only into the Q loss
        x, x_next = x_q.detach(), torch.cat([batch.next_obs, zb], -1).detach()
        terms: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            q_data = twin_q(self.q_target, x, batch.action).min(0).values  # [T, B]
        with part("value"):
            terms |= step(self.v_opt, self.value_loss(self.v, x, q_data))
        with part("actor"):
            with torch.no_grad():
                advantage = q_data - self.v(x).squeeze(-1)  # with the new V
            log_prob = self.policy.log_prob(x, batch.action)
            terms |= step(self.policy_opt, self.policy_loss(log_prob, advantage))
        with part("critic"):
            with torch.no_grad():
                v_next = self.v(x_next).squeeze(-1)
            q = twin_q(self.q, x_q, batch.action)
            terms |= step(self.q_opt, self.q_loss(q, v_next, batch))
        with part("target and EMA updates"), torch.no_grad():
            for target, online in zip(self.q_target.parameters(), self.q.parameters(), strict=True):
                target.lerp_(online, self.tau)
        return terms
