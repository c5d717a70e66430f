"""BRAC on a SAC-v1 actor-critic, conditioned on a task vector: FOCAL's meta-policy learner.

SAC-v1 (Haarnoja et al. 2018, as FOCAL's reference): twin Q, a state value V and its Polyak
target; the reward scale plays the entropy temperature. Behaviour regularisation (Wu et al.
2019): a dual KL critic estimates the divergence between the policy and the data; the policy
loss adds α·divergence, the value target optionally subtracts it, and α can adapt toward a
target divergence. With α = 0 and no adaptation (the point robots) the divergence critic is not
trained at all.

Every network acts on the last dimension, so a meta-batch [T, B, ...] of all tasks is one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from components.profiling import part
from components.rl.batched_mlp import BatchedMLP, twin_q
from components.rl.brac_losses import AlphaLoss, PolicyLoss, QLoss, ValueLoss
from components.rl.divergence import DualKLCritic
from components.rl.networks import MLP, TanhGaussianPolicy
from components.rl.steps import frozen, step
from components.seeds import per_seed_mean, seed_count
from components.transitions import Transitions
from registry import register
from registry.constraints import Fraction, NonNegativeFloat, PositiveFloat, PositiveInt, Widths


@register("agent", "brac")
class BRAC(nn.Module):
    """Twin Q, V, target V, tanh-Gaussian policy and a divergence critic over (s, z).

    Args:
        obs_dim, act_dim, latent_dim: sizes (set by the algorithm).
        hidden: hidden sizes of policy, Q and V (FOCAL: 3 × 256); the divergence critic's are
            its own argument (`dual_kl_critic.hidden`).
        lr: Adam learning rate of policy, Q and V (FOCAL++ table: 1e-3 point robots, 3e-3
            MuJoCo; the reference code 3e-4).
        policy_lr, q_lr, v_lr: one of them on its own (None: `lr`).
        divergence_lr: learning rate of the divergence critic (1e-4).
        discount: γ.
        tau: Polyak rate of the target V.
        reward_scale: multiplies rewards; acts as the inverse entropy temperature.
        policy_mean_reg, policy_std_reg: L2 weights on the policy's mean and log-std.
        bc_weight: weight of a behaviour-cloning term in the policy loss, the squared distance
            of tanh(mean) to the data's action (0: none, FOCAL's BRAC). Where an action moves
            the state by a centimetre (Meta-World), Q learns little of the action's effect
            and the divergence critic too little of the data's actions to guide the policy.
        alpha: weight of the divergence (its initial value when adapted).
        target_divergence: α adapts toward it when set (MuJoCo: 0.05); None keeps α fixed.
        alpha_lr: learning rate of log α.
        alpha_max: upper bound of the adapted α (None: unbounded). Where no tanh-Gaussian can
            come within the target of the data's actions (Meta-World's noisiest tier: actions
            clipped to the corners of the box, two modes per dimension), dual ascent raises α
            without end and the policy collapses once α·divergence outweighs everything else.
        value_penalty: also subtract α·divergence in the value target.
        divergence: the divergence critic class (gin: `@dual_kl_critic`).
        divergence_steps: critic updates per policy update.
        always_train_divergence: train the divergence critic even when α = 0 and fixed, as the
            FOCAL reference does (wasted work; for equal-work benchmarks only).
        regularise: False makes it plain SAC-v1 whatever α and target divergence say (Batch
            PEARL: the environment columns set α for the BRAC rows).
        layer_norm: LayerNorm (without affine parameters) in every hidden layer of Q, V and
            the target V, the critics.

    Example (one update on a meta-batch of 4 tasks × 8 transitions, then acting):
        >>> import torch
        >>> from components.transitions import Transitions
        >>> agent = BRAC(obs_dim=2, act_dim=2, latent_dim=5, hidden=(16, 16))
        >>> b = dict(obs=torch.randn(4, 8, 2), action=torch.rand(4, 8, 2) * 2 - 1)
        >>> b |= dict(reward=torch.randn(4, 8), next_obs=torch.randn(4, 8, 2))
        >>> zeros = torch.zeros(4, 8)
        >>> batch = Transitions(**b, sparse_reward=zeros, terminated=zeros, truncated=zeros)
        >>> sorted(k for k in agent.update(batch, torch.zeros(4, 5)) if k.startswith("loss_"))
        ['loss_policy', 'loss_q', 'loss_v']
        >>> tuple(agent.act(batch.obs, torch.zeros(4, 8, 5)).shape)
        (4, 8, 2)
    """

    seed_batching = True  # components/seeds: per-seed losses, α and random draws

    def __init__(
        self,
        *,
        obs_dim: int,
        act_dim: int,
        latent_dim: int,
        hidden: Widths = (256, 256, 256),
        lr: PositiveFloat = 3e-4,
        policy_lr: PositiveFloat | None = None,
        q_lr: PositiveFloat | None = None,
        v_lr: PositiveFloat | None = None,
        divergence_lr: PositiveFloat = 1e-4,
        discount: Fraction = 0.99,
        tau: Fraction = 0.005,
        reward_scale: PositiveFloat = 5.0,
        policy_mean_reg: NonNegativeFloat = 1e-3,
        policy_std_reg: NonNegativeFloat = 1e-3,
        bc_weight: NonNegativeFloat = 0.0,
        alpha: NonNegativeFloat = 0.0,
        target_divergence: float | None = None,
        alpha_lr: PositiveFloat = 1e-3,
        alpha_max: PositiveFloat | None = None,
        value_penalty: bool = False,
        divergence: Callable[..., DualKLCritic] = DualKLCritic,
        divergence_steps: PositiveInt = 1,
        always_train_divergence: bool = False,
        regularise: bool = True,
        layer_norm: bool = False,
    ):
        super().__init__()
        if not regularise:
            alpha, target_divergence = 0.0, None
        x_dim = obs_dim + latent_dim
        hidden = tuple(hidden)
        self.discount, self.tau, self.reward_scale = discount, tau, reward_scale
        self.target_divergence = target_divergence
        if alpha_max is not None and alpha > alpha_max:
            raise ValueError(f"brac: alpha ({alpha}) is above alpha_max ({alpha_max})")
        self.log_alpha_max = None if alpha_max is None else math.log(alpha_max)
        self.divergence_steps = divergence_steps
        self.policy = TanhGaussianPolicy(in_features=x_dim, act_dim=act_dim, hidden=hidden)
        # Twin Q as one batched module of two models: one matmul per layer for both.
        critic = dict(hidden=hidden, layer_norm=layer_norm)
        self.q = BatchedMLP(n_models=2, in_features=x_dim + act_dim, out_features=1, **critic)
        self.v = MLP(in_features=x_dim, out_features=1, **critic)
        self.v_target = MLP(in_features=x_dim, out_features=1, **critic)
        self.v_target.load_state_dict(self.v.state_dict())
        self.v_target.requires_grad_(False)
        self.uses_divergence = alpha > 0 or target_divergence is not None
        self.trains_divergence = self.uses_divergence or always_train_divergence
        # its own sizes come from gin (`dual_kl_critic.hidden`)
        self.divergence = divergence(in_features=x_dim, act_dim=act_dim)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(max(alpha, 1e-8))))
        # the update's losses, in its order (components/rl/brac_losses.py)
        self.q_loss = QLoss(discount=discount, reward_scale=reward_scale)
        self.value_loss = ValueLoss(value_penalty=value_penalty)
        self.policy_loss = PolicyLoss(
            mean_reg=policy_mean_reg, std_reg=policy_std_reg, bc_weight=bc_weight
        )
        self.alpha_loss = (
            AlphaLoss(target_divergence=target_divergence)
            if target_divergence is not None
            else None
        )

        def adam(params, rate):
            return torch.optim.Adam(params, lr=rate, fused=True)

        self.policy_opt = adam(self.policy.parameters(), policy_lr or lr)
        self.q_opt = adam(self.q.parameters(), q_lr or lr)
        self.v_opt = adam(self.v.parameters(), v_lr or lr)
        self.divergence_opt = adam(self.divergence.parameters(), divergence_lr)
        self.alpha_opt = adam([self.log_alpha], alpha_lr)

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Every optimiser, by name (a checkpoint saves their states beside the weights)."""
        return {
            "policy": self.policy_opt,
            "q": self.q_opt,
            "v": self.v_opt,
            "divergence": self.divergence_opt,
            "alpha": self.alpha_opt,
        }

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.exp().detach() if self.uses_divergence else torch.zeros(())

    def q_values(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Twin Q [2, ...] for x [..., F + Z] and action [..., A]."""
        return twin_q(self.q, x, action)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Deterministic actions (tanh of the mean) [..., A] for obs [..., F] and z [..., Z]."""
        return self.policy.deterministic(torch.cat([obs, z], -1))

    def update(self, batch: Transitions, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """One gradient step on a meta-batch: batch fields [T, B, ...] (dense reward), z [T, Z].

        In order: the divergence critic; twin Q; then V, the policy and α from one policy sample
        scored by the updated critics; the target V. If z requires grad, the Q loss alone
        back-propagates into it (PEARL-style; FOCAL detaches z and the caller steps the
        encoder). Returns detached scalars: `loss_*` and diagnostics.
        """
        zb = z[:, None, :].expand(-1, batch.obs.shape[1], -1)  # [T, B, Z]
        x_q = torch.cat([batch.obs, zb], -1)  # carries z's gradient only into the Q loss
        x, x_next = x_q.detach(), torch.cat([batch.next_obs, zb], -1).detach()
        terms: dict[str, torch.Tensor] = {}

        if self.trains_divergence:
            for _ in range(self.divergence_steps):
                with part("divergence critic"):
                    with torch.no_grad():
                        policy_action = self.policy(x).action
                    critic = self.divergence.loss(x, batch.action, policy_action)
                    terms |= step(self.divergence_opt, critic)

        with part("critic"):
            terms |= step(self.q_opt, self.q_loss(self.q_values, self.v_target, x_q, batch, x_next))

        with part("actor"):
            sample = self.policy(x)
            with frozen(self.q):  # the policy's gradient reaches Q's input, not its weights
                q_new = self.q_values(x, sample.action).min(0).values  # [T, B]
            alpha, divergence = self.alpha, torch.zeros_like(q_new)
            if self.uses_divergence:
                with frozen(self.divergence):
                    divergence = self.divergence.estimate(x, batch.action, sample.action)
        with part("value"):
            value = self.value_loss(self.v, x, q_new, sample.log_prob, alpha, divergence)
            terms |= step(self.v_opt, value)
        with part("actor"):
            policy = self.policy_loss(sample, q_new, alpha, divergence, batch.action)
            terms |= step(self.policy_opt, policy)
        if self.alpha_loss is not None:
            with part("temperature"):
                terms |= step(self.alpha_opt, self.alpha_loss(self.log_alpha, divergence))
                if self.log_alpha_max is not None:
                    with torch.no_grad():
                        self.log_alpha.clamp_(max=self.log_alpha_max)

        with part("target and EMA updates"), torch.no_grad():
            for target, online in zip(self.v_target.parameters(), self.v.parameters(), strict=True):
                target.lerp_(online, self.tau)
        achieved = per_seed_mean(divergence, seed_count(self)).detach()
        return {**terms, "alpha": alpha, "policy_divergence": achieved}
