"""The meta-policy networks: shapes over leading dims, the tanh-Gaussian log-density."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from components.rl.networks import MLP, TanhGaussianPolicy


@pytest.mark.parametrize("lead", [(5,), (3, 4), (2, 3, 4)])
def test_shapes_follow_leading_dims(lead):
    policy = TanhGaussianPolicy(in_features=7, act_dim=2, hidden=(8,))
    sample = policy(torch.randn(*lead, 7))
    assert sample.action.shape == (*lead, 2)
    assert sample.log_prob.shape == lead
    assert MLP(in_features=7, out_features=3, hidden=(8, 8))(torch.randn(*lead, 7)).shape == (
        *lead,
        3,
    )


def test_log_prob_matches_torch_tanh_normal():
    torch.manual_seed(0)
    policy = TanhGaussianPolicy(in_features=3, act_dim=2, hidden=(16,), log_std_max=2.0)
    x = torch.randn(64, 3)
    sample = policy(x)
    mean, log_std = policy.net(x).chunk(2, -1)
    dist = TransformedDistribution(
        Normal(mean, log_std.clamp(-20, 2).exp()), [TanhTransform(cache_size=1)]
    )
    # the log-density of the same pre-tanh draw, computed by torch.distributions
    pre_tanh = torch.atanh(sample.action.clamp(-1 + 1e-6, 1 - 1e-6))
    ok = sample.action.abs().amax(-1) < 0.999  # atanh is ill-conditioned near ±1
    expected = dist.base_dist.log_prob(pre_tanh).sum(-1) - TanhTransform().log_abs_det_jacobian(
        pre_tanh, sample.action
    ).sum(-1)
    torch.testing.assert_close(sample.log_prob[ok], expected[ok], atol=1e-3, rtol=1e-4)


def test_actions_are_bounded_and_deterministic_is_tanh_mean():
    policy = TanhGaussianPolicy(in_features=3, act_dim=2, hidden=(8,))
    x = torch.randn(100, 3) * 50
    assert policy(x).action.abs().max() <= 1
    torch.testing.assert_close(policy.deterministic(x), torch.tanh(policy.net(x).chunk(2, -1)[0]))


def test_log_std_is_clamped():
    policy = TanhGaussianPolicy(in_features=1, act_dim=1, hidden=(4,), log_std_max=0.0)
    with torch.no_grad():
        policy.net.net[-1].bias.fill_(5.0)
    assert policy(torch.zeros(3, 1)).log_std.max() <= 0.0
    assert math.isfinite(float(policy(torch.zeros(3, 1)).log_prob.detach().sum()))
