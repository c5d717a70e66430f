"""PEARL's probabilistic encoder: the product of Gaussian factors against its closed form, the
KL to the prior, sampling in training and the posterior mean in evaluation."""

from __future__ import annotations

import torch

from components.encoders.mlp import MLPEncoder
from components.encoders.probabilistic import (
    ProbabilisticEncoder,
    gaussian_product,
    kl_to_unit_gaussian,
)


def test_product_of_two_unit_gaussians_is_their_average_with_half_the_variance():
    mean = torch.tensor([[[1.0], [3.0]]])  # [T=1, B=2, Z=1]
    mu, var = gaussian_product(mean, torch.ones(1, 2, 1))
    torch.testing.assert_close(mu, torch.tensor([[2.0]]))
    torch.testing.assert_close(var, torch.tensor([[0.5]]))


def test_product_matches_the_normalised_density_product():
    """Multiply the densities on a grid, normalise, and read off the moments."""
    g = torch.Generator().manual_seed(0)
    means = torch.randn(5, generator=g, dtype=torch.float64)
    variances = torch.rand(5, generator=g, dtype=torch.float64) + 0.2
    mu, var = gaussian_product(means.view(1, 5, 1), variances.view(1, 5, 1))
    grid = torch.linspace(-6, 6, 200_001, dtype=torch.float64)
    log_density = sum(
        torch.distributions.Normal(m, v.sqrt()).log_prob(grid)
        for m, v in zip(means, variances, strict=True)
    )
    p = torch.softmax(log_density, 0)
    grid_mean = (p * grid).sum()
    torch.testing.assert_close(mu.squeeze(), grid_mean, atol=1e-6, rtol=0)
    torch.testing.assert_close(
        var.squeeze(), (p * (grid - grid_mean) ** 2).sum(), atol=1e-6, rtol=0
    )


def test_kl_to_the_prior_matches_torch():
    g = torch.Generator().manual_seed(1)
    mean, var = torch.randn(4, 3, generator=g), torch.rand(4, 3, generator=g) + 0.1
    expected = torch.distributions.kl_divergence(
        torch.distributions.Normal(mean, var.sqrt()), torch.distributions.Normal(0.0, 1.0)
    ).sum(-1)
    torch.testing.assert_close(kl_to_unit_gaussian(mean, var), expected)
    assert float(kl_to_unit_gaussian(torch.zeros(1, 3), torch.ones(1, 3))) == 0.0


def encoder(kl_weight=0.1):
    torch.manual_seed(0)

    def transition(*, sizes, latent_dim):
        return MLPEncoder(sizes=sizes, latent_dim=latent_dim, hidden=(16,), squash=False)

    return ProbabilisticEncoder(
        sizes=(2, 2, 2, 1), latent_dim=3, transition=transition, kl_weight=kl_weight
    )


def test_training_samples_around_the_posterior_and_evaluation_takes_its_mean():
    enc = encoder().requires_grad_(False)
    context = torch.randn(4, 32, 7)
    enc.eval()
    first, second = enc(context), enc(context)
    torch.testing.assert_close(first.mean, second.mean)  # deterministic
    mean_b, raw = enc.transition(context).chunk(2, -1)
    mu, var = gaussian_product(mean_b, torch.nn.functional.softplus(raw))
    torch.testing.assert_close(first.mean, mu)
    enc.train()
    n = 1000  # draws, all in one call: the context repeated n times along the task axis
    draws = enc(context.repeat(n, 1, 1)).mean.reshape(n, 4, 3)
    spread = float(var.sqrt().max())
    torch.testing.assert_close(draws.mean(0), mu, atol=5 * spread / n**0.5, rtol=0)
    torch.testing.assert_close(draws.var(0), var, rtol=5 * (2 / n) ** 0.5, atol=1e-6)


def test_encoder_reports_its_weighted_kl_and_precision_weights():
    enc = encoder(kl_weight=0.5).eval().requires_grad_(False)
    context = torch.randn(4, 16, 7)
    out = enc(context)
    mean_b, raw = enc.transition(context).chunk(2, -1)
    mu, var = gaussian_product(mean_b, torch.nn.functional.softplus(raw))
    torch.testing.assert_close(out.losses["loss_kl"], 0.5 * kl_to_unit_gaussian(mu, var).sum())
    assert out.weights.shape == (4, 16) and bool((out.weights > 0).all())
    torch.testing.assert_close(out.weights.mean(1), torch.ones(4))
    assert out.per_transition.shape == (4, 16, 3)
