"""CORRO's generative model of a transition's outcome: a conditional VAE of (s′, r) given
(s, a), fitted on transitions pooled over the meta-batch's tasks with no task label (Yuan & Lu,
ICML 2022; their `models/generative.py`).

Pooled over tasks, p(s′, r | s, a) is the mixture of every task's outcome of (s, a); a draw
u ~ N(0, I) decoded with the anchor's (s, a) is the outcome of some task, which gives CORRO
negatives where tasks differ in dynamics that have no closed form (Walker's bodies). Loss, as
CORRO's code: β·KL(q(u | s, a, s′, r) ‖ N(0, I)) + MSE(s′) + MSE(r), β = 0.2; encoder and
decoder have one hidden layer there (64 units and 5 noise dimensions on the cheetah and point
robot, 128 and 64 on the walker). The pooled model may draw the anchor's own task's outcome:
a false negative, as in CORRO.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from components.objectives.networks import mlp
from components.transitions import Transitions


class OutcomeCVAE(nn.Module):
    """q(u | s, a, s′, r) and p(s′, r | s, a, u), Gaussian with unit decoder variance (MSE).

    Args:
        obs_dim, act_dim: sizes.
        noise_dim: dimensions of u.
        hidden: widths of the encoder's and the decoder's hidden layers.
        kl_weight: β, the weight of the KL term.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        *,
        noise_dim: int = 64,
        hidden: tuple[int, ...] = (128,),
        kl_weight: float = 0.2,
    ):
        super().__init__()
        self.noise_dim, self.kl_weight = noise_dim, kl_weight
        self.encoder = mlp(2 * obs_dim + act_dim + 1, hidden, 2 * noise_dim)
        self.decoder = mlp(obs_dim + act_dim + noise_dim, hidden, obs_dim + 1)

    def decode(self, obs: torch.Tensor, action: torch.Tensor, u: torch.Tensor):
        """(s′, r) [..., F], [...] of (s, a) [..., ·] and noise u [..., U]."""
        out = self.decoder(torch.cat([obs, action, u], -1))
        return out[..., :-1], out[..., -1]

    def loss(self, t: Transitions) -> dict[str, torch.Tensor]:
        """The negative ELBO (up to constants) on transitions [..., ·], and its parts."""
        outcome = torch.cat([t.next_obs, t.reward.unsqueeze(-1)], -1)
        mu, log_var = self.encoder(torch.cat([t.obs, t.action, outcome], -1)).chunk(2, -1)
        u = mu + torch.randn_like(mu) * (0.5 * log_var).exp()
        next_obs, reward = self.decode(t.obs, t.action, u)
        kl = 0.5 * (mu**2 + log_var.exp() - 1 - log_var).sum(-1).mean()
        mse = ((next_obs - t.next_obs) ** 2).mean() + ((reward - t.reward) ** 2).mean()
        return {"loss_outcome_model": self.kl_weight * kl + mse, "outcome_model_mse": mse}

    @torch.no_grad()
    def sample(self, t: Transitions) -> Transitions:
        """`t` with each outcome (s′, r) replaced by a draw from the model given its (s, a)."""
        u = torch.randn(*t.reward.shape, self.noise_dim, device=t.obs.device, dtype=t.obs.dtype)
        next_obs, reward = self.decode(t.obs, t.action, u)
        return dataclasses.replace(t, next_obs=next_obs, reward=reward)
