"""UNICORN's reconstruction term (Li et al., NeurIPS 2024): decode each context transition's
outcome from its (s, a) and the task vector.

UNICORN bounds the information a task vector holds about the task between I(Z; X_t | X_b) and
I(Z; X) (X_b = (s, a), X_t = (r, s′)): FOCAL's metric loss works on the upper bound, a decoder
p_θ(X_t | X_b, z) on the lower one. Its self-supervised variant (UNICORN-SS) minimises

  L = α · L_FOCAL − log p_θ(s′ − s | s, a, z) − log p_θ(r | s, a, z)

with z the task vector of the very context whose transitions are decoded, not detached, so the
decoder's error teaches the encoder what distinguishes tasks: rewards where tasks differ in
reward, dynamics where they differ in dynamics.

The decoder is a Gaussian MLP with a learned log-variance held between learned soft bounds (the
`mbrl` GaussianMLP UNICORN uses); the negative log-likelihood keeps its constants, so its
minimum on data with Gaussian noise of variance σ² is ½(1 + log 2πσ²) per output.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from components.objectives.networks import mlp
from registry import RecipeError, register
from registry.constraints import NonNegativeFloat, PositiveInt, Widths
from registry.validation import check_arguments


def gaussian_nll(target: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """−log N(target; mean, exp(log_var)), summed over the last dimension."""
    return 0.5 * ((target - mean) ** 2 * torch.exp(-log_var) + log_var + math.log(2 * math.pi)).sum(
        -1
    )


@register("objective", "transition_decoder")
class TransitionDecoder(nn.Module):
    """−log p(s′ − s, r | s, a, z) of every context transition, z its batch's task vector.

    Args:
        obs_dim, act_dim, latent_dim: sizes (set by the algorithm).
        hidden: the decoder's hidden widths (UNICORN: 2 layers).
        weight: multiplies the reconstruction loss (UNICORN weighs FOCAL's term instead).
    """

    def __init__(
        self,
        *,
        obs_dim: PositiveInt,
        act_dim: PositiveInt,
        latent_dim: PositiveInt,
        hidden: Widths = (64, 64),
        weight: NonNegativeFloat = 1.0,
    ):
        super().__init__()
        check_arguments("transition_decoder", type(self).__init__, locals())
        self.weight = weight
        outputs = obs_dim + 1  # s′ − s and r
        self.net = mlp(obs_dim + act_dim + latent_dim, hidden, 2 * outputs)
        # soft bounds of the log-variance, learned (mbrl's GaussianMLP)
        self.max_log_var = nn.Parameter(torch.full((outputs,), 0.5))
        self.min_log_var = nn.Parameter(torch.full((outputs,), -10.0))

    def predict(self, obs, action, z) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance [..., obs_dim + 1] of (s′ − s, r)."""
        mean, log_var = self.net(torch.cat([obs, action, z], -1)).chunk(2, -1)
        log_var = self.max_log_var - F.softplus(self.max_log_var - log_var)
        log_var = self.min_log_var + F.softplus(log_var - self.min_log_var)
        return mean, log_var

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        if emb.context is None:
            raise RecipeError(
                "objective transition_decoder needs the context transitions "
                "(TaskEmbeddings.context) to decode; its trainer passes none"
            )
        ctx = emb.context
        z = emb.query_mean.unsqueeze(1).expand(-1, ctx.obs.shape[1], -1)  # [T, B, Z]
        mean, log_var = self.predict(ctx.obs, ctx.action, z)
        target = torch.cat([ctx.next_obs - ctx.obs, ctx.reward.unsqueeze(-1)], -1)
        nll = gaussian_nll(target, mean, log_var).mean()
        # mbrl's penalty that keeps the learned bounds of the log-variance tight
        bounds = 0.01 * (self.max_log_var.sum() - self.min_log_var.sum())
        return {
            "loss_reconstruction": self.weight * nll + bounds,
            "reconstruction_nll": nll.detach(),
        }
