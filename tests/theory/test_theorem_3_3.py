"""Theorem 3.3 (variance reduction by batch attention), in the paper's model (appendix B).

A task's context mixes non-sparse transitions (share p, mean embedding x_n with variance V_n)
and absolutely sparse ones (share 1 − p, x_s, V_s), x_n and x_s independent. Batch attention
re-weights them so the weighted share of non-sparse transitions is p′ (weights average 1):
  Var(μ(W)) = p′² V_n + (1 − p′)² V_s,   Var(μ) = p² V_n + (1 − p)² V_s,
  Var(μ(W)) − Var(μ) = (p′ − p)[(p′ + p) V_n − (2 − p − p′) V_s],
which is ≤ 0 for p ≤ p′ ≤ U(p) = ((2 − p) V_s − p V_n)/(V_n + V_s); that interval is non-empty
exactly when the sparsity ratio 1 − p ≥ V_n/(V_n + V_s) (Eq. sparse_threshold).

Correction (docs/THEORY.md): the paper concludes Var(μ(Ŵ)) ≤ Var(μ) for any learned p̂′ ≥ p once
the data are sparse enough; that needs p̂′ ≤ U(p) as well — a gate that over-weights the
non-sparse transitions (p′ > U(p)) increases the variance at any sparsity (tested below).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from components.encoders.encoded import weighted_mean

shares = st.floats(0.01, 0.99)
variances = st.floats(1e-3, 1e3)


def var_weighted(p_prime, v_n, v_s):
    return p_prime**2 * v_n + (1 - p_prime) ** 2 * v_s


def upper(p, v_n, v_s):
    return ((2 - p) * v_s - p * v_n) / (v_n + v_s)


@given(p=shares, p_prime=st.floats(0.0, 1.0), v_n=variances, v_s=variances)
def test_closed_form_difference(p, p_prime, v_n, v_s):
    difference = var_weighted(p_prime, v_n, v_s) - var_weighted(p, v_n, v_s)
    factored = (p_prime - p) * ((p_prime + p) * v_n - (2 - p - p_prime) * v_s)
    assert np.isclose(difference, factored, rtol=1e-9, atol=1e-9 * (v_n + v_s))


@given(p=shares, t=st.floats(0.0, 1.0), v_n=variances, v_s=variances)
def test_weighted_variance_not_larger_inside_the_interval(p, t, v_n, v_s):
    hi = min(1.0, upper(p, v_n, v_s))
    assume(hi >= p)
    p_prime = p + t * (hi - p)
    assert var_weighted(p_prime, v_n, v_s) <= var_weighted(p, v_n, v_s) * (1 + 1e-12) + 1e-12


@given(p=shares, v_n=variances, v_s=variances)
def test_interval_non_empty_iff_sparse_enough(p, v_n, v_s):
    threshold = v_n / (v_n + v_s)
    assume(abs((1 - p) - threshold) > 1e-9)  # away from the boundary, where rounding decides
    assert (upper(p, v_n, v_s) >= p) == ((1 - p) >= threshold)


@given(p=shares, v_n=variances, v_s=variances, excess=st.floats(1e-3, 1.0))
def test_over_weighting_increases_variance_at_any_sparsity(p, v_n, v_s, excess):
    p_prime = max(p, upper(p, v_n, v_s)) + excess * (1 - max(p, upper(p, v_n, v_s)))
    assume(p_prime > p + 1e-6 and p_prime > upper(p, v_n, v_s) + 1e-6 and p_prime <= 1)
    assert var_weighted(p_prime, v_n, v_s) > var_weighted(p, v_n, v_s)


def monte_carlo(p, p_prime, batch=40, draws=20_000, sigma_n=1.0, sigma_s=0.3, seed=0):
    """Empirical variances of the plain and the gated batch mean (our `weighted_mean`) over
    synthetic sparse-reward contexts with exactly p·B non-sparse transitions per batch."""
    g = torch.Generator().manual_seed(seed)
    n_n = round(p * batch)
    sparse = torch.arange(batch) >= n_n  # [B]
    noise = torch.randn(draws, batch, 1, generator=g, dtype=torch.float64)
    scale = torch.where(sparse, sigma_s, sigma_n)[None, :, None]
    centre = torch.where(sparse, -1.0, 2.0)[None, :, None]
    e = centre + scale * noise  # [draws, B, 1] per-transition embeddings
    w_n, w_s = p_prime / p, (1 - p_prime) / (1 - p)  # weights average 1 over the batch
    weights = torch.where(sparse, w_s, w_n).expand(draws, batch).to(torch.float64)
    plain = weighted_mean(e, torch.ones_like(weights))[:, 0]
    gated = weighted_mean(e, weights)[:, 0]
    v_n, v_s = sigma_n**2 / n_n, sigma_s**2 / (batch - n_n)  # variances of x_n and x_s
    return plain.var().item(), gated.var().item(), v_n, v_s


@pytest.mark.parametrize("p", [0.1, 0.25, 0.5])
def test_monte_carlo_matches_closed_form(p):
    p_prime = min(0.95, p + 0.2)
    plain, gated, v_n, v_s = monte_carlo(p, p_prime)
    # 20,000 draws: a variance estimate's relative standard error is sqrt(2/20,000) = 1%.
    assert plain == pytest.approx(var_weighted(p, v_n, v_s), rel=0.05)
    assert gated == pytest.approx(var_weighted(p_prime, v_n, v_s), rel=0.05)


def test_monte_carlo_gate_helps_above_the_threshold_and_not_below():
    # batch 40, σ_n = 1, σ_s = 0.3: with p = 0.1, V_n = 1/4, V_s = 0.09/36; threshold on the
    # sparse share: V_n/(V_n + V_s) = 0.990 → 0.9 is below it: the gate cannot help.
    p = 0.1
    plain, gated, v_n, v_s = monte_carlo(p, 0.2)
    assert (1 - p) < v_n / (v_n + v_s) and gated > plain * 1.5
    # Few informative samples but noisy sparse ones: σ_s = 3 makes V_s large, threshold small.
    plain, gated, v_n, v_s = monte_carlo(0.25, 0.4, sigma_n=1.0, sigma_s=3.0)
    assert v_n / (v_n + v_s) < (1 - 0.25) and 0.25 <= 0.4 <= upper(0.25, v_n, v_s)
    assert gated < plain * 0.8
