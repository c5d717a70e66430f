"""PEARL's probabilistic context encoder (Rakelly et al., ICML 2019), for Batch PEARL.

Each transition c_b gives a Gaussian factor N(μ_b, σ²_b) over z; the posterior is their
product, N(μ, σ²) with 1/σ² = Σ_b 1/σ²_b and μ = σ² Σ_b μ_b/σ²_b (per latent dimension; PEARL
has no prior factor in the product). Training draws z = μ + σ·ε; eval mode uses μ. The KL of
the posterior to the unit Gaussian prior, weighted by `kl_weight` and summed over the
meta-batch as in PEARL, is returned as the encoder's own loss term.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from components.encoders.encoded import Encoded
from components.encoders.mlp import MLPEncoder
from registry import register
from registry.constraints import NonNegativeFloat, PositiveFloat


def gaussian_product(
    mean: torch.Tensor, variance: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Factors [T, B, Z] (means, variances) -> the product's mean and variance [T, Z]."""
    precision = variance.reciprocal()
    posterior_variance = precision.sum(1).reciprocal()
    return posterior_variance * (mean * precision).sum(1), posterior_variance


def kl_to_unit_gaussian(mean: torch.Tensor, variance: torch.Tensor) -> torch.Tensor:
    """KL(N(mean, variance) ‖ N(0, I)) per row [T]: ½ Σ_z (σ² + μ² − 1 − log σ²)."""
    return 0.5 * (variance + mean**2 - 1.0 - variance.log()).sum(-1)


@register("context_encoder", "probabilistic_encoder")
class ProbabilisticEncoder(nn.Module):
    """Context [T, B, F] -> Encoded with z drawn from the product of per-transition Gaussians.

    `per_transition` holds the factors' means; `weights` each transition's share of the
    posterior precision (averaged over dimensions, scaled to average 1), which is how much the
    product listens to it.

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        transition: per-transition network class giving 2·Z outputs (gin: `@mlp_encoder` with
            `mlp_encoder.squash = False`).
        kl_weight: λ of the KL term (PEARL: 0.1).
        min_variance: floor of each factor's variance (softplus output), for stability.
    """

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        transition: Callable[..., nn.Module] = MLPEncoder,
        kl_weight: NonNegativeFloat = 0.1,
        min_variance: PositiveFloat = 1e-7,
    ):
        super().__init__()
        self.transition = transition(sizes=sizes, latent_dim=2 * latent_dim)
        self.kl_weight, self.min_variance = kl_weight, min_variance

    def forward(self, context: torch.Tensor) -> Encoded:
        mean_b, raw = self.transition(context).chunk(2, -1)  # [T, B, Z] each
        variance_b = F.softplus(raw).clamp_min(self.min_variance)
        mean, variance = gaussian_product(mean_b, variance_b)
        z = mean + variance.sqrt() * torch.randn_like(mean) if self.training else mean
        precision = variance_b.reciprocal().mean(-1)  # [T, B]
        weights = precision / precision.mean(1, keepdim=True)
        kl = self.kl_weight * kl_to_unit_gaussian(mean, variance).sum()
        return Encoded(mean_b, weights, z, losses={"loss_kl": kl})
