"""BCQ (Fujimoto, Meger and Precup, ICML 2019), over (s, z): Contextual BCQ's and MBML's learner.

Batch-Constrained Q-learning acts only near actions the data show: a conditional VAE models
the behaviour actions, a perturbation model moves a decoded action by at most
`max_perturbation` per dimension, and the policy is the best of `samples` perturbed decodes
under the first critic. The twin critics' target is the soft clipped double-Q value
λ·min + (1 − λ)·max, maximised over `samples` candidate next actions.

`models = 0`: one set of networks over (s, z), for a meta-batch [T, B, ·] of any tasks (the
task enters through z). `models = K`: K independent networks (one per task, no z), evaluated
together with batched weights: inputs [K, B, ·], or [M, B, ·] with `models=` an index of M of
them (MBML's per-task teachers). Actions live in [−1, 1]^A.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from components.rl.batched_mlp import BatchedMLP
from components.rl.networks import MLP
from components.rl.steps import frozen, step
from components.transitions import Transitions
from registry import register
from registry.constraints import (
    Count,
    Fraction,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    Widths,
)
from registry.validation import check_arguments


@register("agent", "bcq")
class BCQ(nn.Module):
    """Conditional VAE, perturbation actor (+ target), twin Q (+ target).

    Args:
        obs_dim, act_dim, latent_dim: sizes (set by the algorithm; latent_dim 0 for per-task
            networks without z).
        models: 0 for one shared set of networks; K for K independent per-task networks.
        hidden: hidden sizes of the actor and the critics (BCQ: 400, 300).
        vae_hidden: hidden sizes of the VAE's encoder and decoder (BCQ: 750, 750).
        lr: Adam learning rate of every part (BCQ: 1e-3).
        vae_lr, actor_lr, q_lr: one part's on its own (None: `lr`).
        discount: γ.
        tau: Polyak rate of the target actor and critics.
        reward_scale: multiplies rewards.
        max_perturbation: Φ, the largest change the actor makes to a decoded action (BCQ: 0.05).
        soft_clip: λ of the target λ·min + (1 − λ)·max over the twin critics (BCQ: 0.75).
        samples: candidate next actions per target and candidate actions per decision (BCQ:
            10 and 100; one setting here).
    """

    def __init__(
        self,
        *,
        obs_dim: int,
        act_dim: int,
        latent_dim: int,
        models: Count = 0,
        hidden: Widths = (400, 300),
        vae_hidden: Widths = (750, 750),
        lr: PositiveFloat = 1e-3,
        vae_lr: PositiveFloat | None = None,
        actor_lr: PositiveFloat | None = None,
        q_lr: PositiveFloat | None = None,
        discount: Fraction = 0.99,
        tau: Fraction = 0.005,
        reward_scale: PositiveFloat = 1.0,
        max_perturbation: NonNegativeFloat = 0.05,
        soft_clip: Fraction = 0.75,
        samples: PositiveInt = 10,
    ):
        super().__init__()
        check_arguments("bcq", BCQ.__init__, locals())
        x_dim = obs_dim + latent_dim
        self.models, self.act_dim, self.vae_latent = models, act_dim, 2 * act_dim
        self.discount, self.tau, self.reward_scale = discount, tau, reward_scale
        self.max_perturbation, self.soft_clip, self.samples = max_perturbation, soft_clip, samples
        hidden, vae_hidden = tuple(hidden), tuple(vae_hidden)
        self.vae_encoder = self._network(x_dim + act_dim, 2 * self.vae_latent, vae_hidden)
        self.vae_decoder = self._network(x_dim + self.vae_latent, act_dim, vae_hidden)
        self.actor = self._network(x_dim + act_dim, act_dim, hidden)
        # Twin Q as one batched module: 2 models shared by all tasks, or 2 per task.
        self.q = BatchedMLP(
            n_models=2 * max(models, 1), in_features=x_dim + act_dim, out_features=1, hidden=hidden
        )
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)

        def adam(module: nn.Module, rate: float | None) -> torch.optim.Optimizer:
            return torch.optim.Adam(module.parameters(), lr=rate or lr)

        self.vae_opt = adam(nn.ModuleList([self.vae_encoder, self.vae_decoder]), vae_lr)
        self.actor_opt = adam(self.actor, actor_lr)
        self.q_opt = adam(self.q, q_lr)

    def _network(self, in_features: int, out_features: int, hidden: tuple[int, ...]) -> nn.Module:
        if self.models:
            return BatchedMLP(
                n_models=self.models,
                in_features=in_features,
                out_features=out_features,
                hidden=hidden,
            )
        return MLP(in_features=in_features, out_features=out_features, hidden=hidden)

    def _run(self, net: nn.Module, x: torch.Tensor, models: torch.Tensor | None) -> torch.Tensor:
        return net(x) if models is None else net(x, models)

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Every optimiser, by name (checkpoints save their states)."""
        return {"vae": self.vae_opt, "actor": self.actor_opt, "q": self.q_opt}

    # --- the parts ---------------------------------------------------------------------------
    def vae_loss(
        self, x: torch.Tensor, action: torch.Tensor, models: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Reconstruction MSE + ½ KL to N(0, I), as BCQ's VAE."""
        mean, log_std = self._run(self.vae_encoder, torch.cat([x, action], -1), models).chunk(2, -1)
        log_std = log_std.clamp(-4.0, 15.0)
        std = log_std.exp()
        u = mean + std * torch.randn_like(std)
        recon = torch.tanh(self._run(self.vae_decoder, torch.cat([x, u], -1), models))
        kl = -0.5 * (1 + 2 * log_std - mean**2 - std**2).mean()
        return {"loss_vae": ((recon - action) ** 2).mean() + 0.5 * kl}

    def decode(self, x: torch.Tensor, models: torch.Tensor | None = None) -> torch.Tensor:
        """A behaviour-like action per row: the decoder at a clipped N(0, I) latent."""
        u = torch.randn(*x.shape[:-1], self.vae_latent, device=x.device).clamp(-0.5, 0.5)
        return torch.tanh(self._run(self.vae_decoder, torch.cat([x, u], -1), models))

    def perturb(
        self,
        x: torch.Tensor,
        action: torch.Tensor,
        models: torch.Tensor | None = None,
        target: bool = False,
    ) -> torch.Tensor:
        """action + ξ(x, action), |ξ| ≤ Φ per dimension, clipped to [−1, 1]."""
        actor = self.actor_target if target else self.actor
        xi = self._run(actor, torch.cat([x, action], -1), models)
        return (action + self.max_perturbation * torch.tanh(xi)).clamp(-1.0, 1.0)

    def q_values(
        self,
        x: torch.Tensor,
        action: torch.Tensor,
        models: torch.Tensor | None = None,
        target: bool = False,
    ) -> torch.Tensor:
        """Twin Q [2, M, N] for x [M, N, F + Z] and action [M, N, A]."""
        net = self.q_target if target else self.q
        xa = torch.cat([x, action], -1)
        if not self.models:
            flat = xa.reshape(1, -1, xa.shape[-1]).expand(2, -1, -1)
            return net(flat).reshape(2, *xa.shape[:-1])
        index = None
        if models is not None:
            index = torch.cat([models, models + self.models])
        return net(xa.repeat(2, 1, 1), index).reshape(2, *xa.shape[:-1])

    def _candidates(
        self, x: torch.Tensor, models: torch.Tensor | None, target: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`samples` perturbed decodes per row of x [M, N, F]: actions [M, N, S, A] and their
        twin values [2, M, N, S]."""
        m, n = x.shape[:2]
        xs = x.repeat_interleave(self.samples, dim=1)  # [M, N·S, F]
        actions = self.perturb(xs, self.decode(xs, models), models, target)
        q = self.q_values(xs, actions, models, target).reshape(2, m, n, self.samples)
        return actions.reshape(m, n, self.samples, -1), q

    def select(self, x: torch.Tensor, models: torch.Tensor | None = None) -> torch.Tensor:
        """BCQ's decision: the candidate with the highest first Q, [M, N, A]."""
        actions, q = self._candidates(x, models, target=False)
        best = q[0].argmax(-1)  # [M, N]
        return actions.gather(2, best[..., None, None].expand(-1, -1, 1, self.act_dim)).squeeze(2)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Actions [..., A] for obs [..., F] and z [..., Z] (shared networks: any leading dims;
        per-task networks: [K, N, ·])."""
        x = torch.cat([obs, z], -1)
        if self.models:
            return self.select(x)
        return self.select(x.reshape(1, -1, x.shape[-1])).reshape(*x.shape[:-1], self.act_dim)

    # --- one gradient step -------------------------------------------------------------------
    def update(self, batch: Transitions, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """One BCQ step on batch fields [M, B, ...] with z [M, Z] (dense reward).

        If z requires grad, the critic loss back-propagates into it (Contextual BCQ trains its
        encoder this way); the VAE and the actor see z detached.
        """
        zb = z[:, None, :].expand(-1, batch.obs.shape[1], -1)
        x_q = torch.cat([batch.obs, zb], -1)
        x = x_q.detach()
        x_next = torch.cat([batch.next_obs, zb], -1).detach()

        terms = step(self.vae_opt, self.vae_loss(x, batch.action))
        terms |= step(self.q_opt, self.q_loss(x_q, batch, x_next))
        terms |= step(self.actor_opt, self.actor_loss(x))
        self.update_targets()
        return terms

    def q_loss(self, x_q: torch.Tensor, batch: Transitions, x_next: torch.Tensor) -> dict:
        """Twin Q to the soft-clipped double-Q target over perturbed decodes at x′ (BCQ)."""
        with torch.no_grad():
            _, q_next = self._candidates(x_next, None, target=True)  # [2, M, B, S]
            soft = (
                self.soft_clip * q_next.min(0).values + (1 - self.soft_clip) * q_next.max(0).values
            )
            target_q = (
                self.reward_scale * batch.reward
                + self.discount * (1.0 - batch.terminated) * soft.max(-1).values
            )
        q = self.q_values(x_q, batch.action)  # [2, M, B]
        return {"loss_q": ((q - target_q) ** 2).mean(dim=(1, 2)).sum(), "q_mean": q.mean().detach()}

    def actor_loss(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """−Q1 of perturbed decodes; the gradient reaches the actor, not the critic or VAE."""
        with torch.no_grad():
            decoded = self.decode(x)
        with frozen(self.q):
            value = self.q_values(x, self.perturb(x, decoded))[0]
        return {"loss_actor": -value.mean()}

    @torch.no_grad()
    def update_targets(self) -> None:
        for target, online in ((self.actor_target, self.actor), (self.q_target, self.q)):
            for t, o in zip(target.parameters(), online.parameters(), strict=True):
                t.lerp_(o, self.tau)
