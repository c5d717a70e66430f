"""CLUB: an upper bound on the mutual information between per-transition embeddings and the
behaviour that produced them (Cheng et al., ICML 2020; CSRO, Gao et al., NeurIPS 2023).

A context collected by another behaviour policy should give the same task vector. CSRO makes
z_i = f(s, a, r[, s′]) carry as little as possible about (s, a) — what the behaviour policy
chose — by minimising CLUB with a variational q_ψ(z | s, a) = N(μ_ψ(s, a), σ²_ψ(s, a)):

  I(z; x) ≤ E_{p(z,x)} log q(z|x) − E_{p(z)} E_{p(x)} log q(z|x)                 (CLUB, Eq. 2)

estimated within each context batch (the pairs of one task, i ≠ j and i = j alike, as CSRO's
code): the log-variances cancel, leaving, per latent dimension,

  CLUB = mean_{i,j} (z_j − μ_i)² / 2σ_i²  −  mean_i (z_i − μ_i)² / 2σ_i²

summed over dimensions. Two terms, one step (the trainer steps encoder and q_ψ together):
`loss_club` moves the encoder with q_ψ frozen (μ, σ detached), `loss_club_estimator` fits q_ψ
by maximum likelihood on the detached embeddings — the alternation of CSRO's code in one
backward pass. The pair mean is expanded (E_j z_j², E_j z_j), so memory is O(T·B·Z), not B².

Against CSRO's code: μ is unbounded (our encoders' embeddings are), σ² = softplus(tanh(·)) as
there, in (0.31, 1.31); the ½ of the Gaussian log-density is kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from components.objectives.networks import mlp
from registry import RecipeError, register
from registry.constraints import NonNegativeFloat, PositiveInt, Widths
from registry.validation import check_arguments


def club_bound(z: torch.Tensor, mu: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """CLUB per context batch: z, mu, var [T, B, Z] -> [T] (summed over Z, pairs within a row
    of T). With a perfect q (mu = z, var = 1) this is the within-batch variance of z."""
    second = (z**2).mean(1, keepdim=True)  # E_j z_j²  [T, 1, Z]
    first = z.mean(1, keepdim=True)  # E_j z_j   [T, 1, Z]
    marginal = (second - 2 * mu * first + mu**2) / (2 * var)  # mean_j (z_j − μ_i)² / 2σ_i²
    joint = (z - mu) ** 2 / (2 * var)
    return (marginal - joint).mean(1).sum(-1)


@register("objective", "club")
class CLUB(nn.Module):
    """CLUB between per-transition embeddings [T, B, Z] and the context's (s, a).

    Args:
        obs_dim, act_dim, latent_dim: sizes (set by the algorithm).
        hidden: widths of q_ψ's hidden layers.
        weight: w_c, the weight of the encoder's term (CSRO: 25 on the point robot, 10-50
            elsewhere); q_ψ's own likelihood is not weighted.
    """

    def __init__(
        self,
        *,
        obs_dim: PositiveInt,
        act_dim: PositiveInt,
        latent_dim: PositiveInt,
        hidden: Widths = (64, 64),
        weight: NonNegativeFloat = 25.0,
    ):
        super().__init__()
        check_arguments("club", type(self).__init__, locals())
        self.weight = weight
        self.q = mlp(obs_dim + act_dim, hidden, 2 * latent_dim)

    def variational(self, obs: torch.Tensor, action: torch.Tensor):
        """q_ψ(z | s, a): mean and variance [..., Z]."""
        mu, h = self.q(torch.cat([obs, action], -1)).chunk(2, -1)
        return mu, F.softplus(torch.tanh(h))

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        if emb.context is None:
            raise RecipeError(
                "objective club needs the context transitions (TaskEmbeddings.context) to "
                "model z given (s, a); its trainer passes none"
            )
        z = emb.query  # [T, B, Z]
        mu, var = self.variational(emb.context.obs, emb.context.action)
        bound = club_bound(z, mu.detach(), var.detach()).mean()  # q_ψ frozen for the encoder
        nll = ((z.detach() - mu) ** 2 / (2 * var) + 0.5 * torch.log(var)).sum(-1).mean()
        return {
            "loss_club": self.weight * bound,
            "loss_club_estimator": nll,
            "club_bound": bound.detach(),
        }
